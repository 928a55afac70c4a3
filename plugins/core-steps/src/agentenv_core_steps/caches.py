"""The caches core-steps fills under the cache dir: venvs for env requirements, protocol
wheels, docker build contexts, and env files fetched from the stores."""

from __future__ import annotations

from agent_env.caches import FolderCache


class VenvCache(FolderCache):
    type = "venvs"
    description = "Python venvs built for env requirements (local sandbox)"
    folders = ("venvs",)


class WheelCache(FolderCache):
    type = "wheels"
    description = "agentenv_protocol wheels built for env and agent images and venvs"
    folders = ("wheels",)


class ContextCache(FolderCache):
    type = "contexts"
    description = "Docker build contexts of envs and agents (content-addressed)"
    folders = ("contexts", "agent-contexts")


class EnvFilesCache(FolderCache):
    type = "env-files"
    description = "Env folders fetched from the stores, by content digest"
    folders = ("envs",)


CACHE_KINDS = (VenvCache, WheelCache, ContextCache, EnvFilesCache)
