"""Stores: the four interfaces (`base`), the local backends (`sqlite`, `filesystem`,
`env_secrets`, registered in `hooks`), `open_stores` (`open`), versioned entities
(`versioned`) and reading a JSON object a record names (`json_objects`)."""

from agent_env.stores.base import DocumentStore, ImageStore, ObjectStore, SecretStore
from agent_env.stores.open import Stores, open_stores, open_stores_async

__all__ = [
    "DocumentStore",
    "ImageStore",
    "ObjectStore",
    "SecretStore",
    "Stores",
    "open_stores",
    "open_stores_async",
]
