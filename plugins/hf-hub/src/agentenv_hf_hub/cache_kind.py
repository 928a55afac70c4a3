"""The Hub downloads as a cache kind: one entry per `<org>/<repo>` under `<cache>/hf/`."""

from __future__ import annotations

from agent_env.caches import FolderCache


class HubCache(FolderCache):
    type = "hub"
    description = "Bundles downloaded from the Hugging Face Hub (hf://)"
    folders = ("hf",)
    depth = 2
