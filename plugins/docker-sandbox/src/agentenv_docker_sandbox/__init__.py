"""agent-env on Docker: the `docker` sandbox provider, content-addressed image builds, and
image stores for the local daemon (`docker`) and any OCI registry (`registry`)."""

__version__ = "1.0.0"
