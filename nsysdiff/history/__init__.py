"""History: a store of main's fingerprints, baselines from its last runs, and change points."""
