"""Two sides compared: the diff, the scale, the attribution, statistics across runs, comparability and ranks."""
