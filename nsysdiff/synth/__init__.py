"""Synthetic nsys-shaped traces: the trace builder and the cascade example (for tests and examples, not reading)."""
