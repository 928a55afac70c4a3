"""The installed version, read from the distribution metadata (cheap: no imports of our own)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agentenv-kernel")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
