"""A trace reduced to a fingerprint: the frozen data, the reduction, the taxonomy, run sets, noise profiles."""
