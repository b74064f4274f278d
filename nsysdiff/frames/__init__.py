"""pandas DataFrame views of fingerprints, diffs, runs and steps, for notebooks (docs/frames.md).

Built from the frozen data and never fed back into it; pandas is imported here alone, so
the command line never pays for it (``pip install "nsysdiff[pandas]"``).
"""
