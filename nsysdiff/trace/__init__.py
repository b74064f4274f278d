"""Reading Nsight Systems SQLite exports: the only package that speaks SQL."""
