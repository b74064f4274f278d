"""A trace reduced to a fingerprint: the frozen data, the reduction, the taxonomy, run sets, noise profiles."""

# The saved fingerprint format's version (``"version"`` in a fingerprint, run set or noise
# profile; the MAJOR of nsysdiff's version, CHANGELOG.md). Here, not in ``model``, so that
# ``nsysdiff --version`` prints it without importing numpy.
FORMAT_VERSION = 2
