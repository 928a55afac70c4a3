"""Name rules every store backend enforces, so a name valid on one backend is valid on all.

Cloud backends import these checks too; a key that one backend would mangle is rejected up
front with a `StoreError` naming the offending value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent_env.errors import StoreError

COLLECTION_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
SECRET_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,127}")
MAX_KEY_CHARS = 1024
STAGING_DIR = ".staging"


def check_collection(collection: object) -> str:
    """A collection is a letter then letters, digits, `_` or `-` (at most 64 characters)."""
    if not isinstance(collection, str) or not COLLECTION_RE.fullmatch(collection):
        raise StoreError(
            f"bad collection name {collection!r}: use a letter followed by letters, digits, "
            "'_' or '-' (at most 64 characters)"
        )
    return collection


def check_document_key(key: object) -> str:
    """A document key is any non-empty string without NUL, at most 1024 characters."""
    if not isinstance(key, str) or not key:
        raise StoreError(f"bad document key {key!r}: must be a non-empty string")
    if "\x00" in key:
        raise StoreError(f"bad document key {key!r}: contains a NUL character")
    if len(key) > MAX_KEY_CHARS:
        raise StoreError(
            f"bad document key {key[:40]!r}...: longer than {MAX_KEY_CHARS} characters"
        )
    return key


def check_document_key_bytes(key: str, limit: int, why: str) -> str:
    """A backend's tighter key limit in UTF-8 bytes (e.g. an index limit), `why` saying whose."""
    if len(key.encode()) > limit:
        raise StoreError(
            f"bad document key {key[:40]!r}...: longer than {limit} bytes in UTF-8 ({why})"
        )
    return key


def check_document_prefix(prefix: object) -> str:
    """A document listing prefix: any string."""
    if not isinstance(prefix, str):
        raise StoreError(f"bad document prefix {prefix!r}: must be a string")
    return prefix


def check_object_key(key: object) -> str:
    """Object keys are relative slash-separated paths: no `..`/`.` segments, no absolute path,
    no backslash, no empty segment, and not under the reserved `.staging/` folder."""
    if not isinstance(key, str) or not key:
        raise StoreError(f"bad object key {key!r}: must be a non-empty string")
    problem = None
    if "\x00" in key:
        problem = "contains a NUL character"
    elif "\\" in key:
        problem = "contains a backslash; use '/' to separate parts"
    elif key.startswith("/"):
        problem = "is an absolute path; keys are relative"
    elif len(key) > MAX_KEY_CHARS:
        problem = f"is longer than {MAX_KEY_CHARS} characters"
    else:
        parts = key.split("/")
        if any(p in ("", ".", "..") for p in parts):
            problem = "has an empty, '.' or '..' part"
        elif parts[0] == STAGING_DIR:
            problem = f"is under the reserved folder {STAGING_DIR!r}"
    if problem:
        raise StoreError(f"bad object key {key!r}: {problem}")
    return key


def check_object_prefix(prefix: object) -> str:
    """A listing prefix: complete parts follow the key rules; the last part may be partial."""
    if not isinstance(prefix, str):
        raise StoreError(f"bad object prefix {prefix!r}: must be a string")
    bad = "\x00" in prefix or "\\" in prefix or prefix.startswith("/")
    if bad or any(p in ("", ".", "..") for p in prefix.split("/")[:-1]):
        raise StoreError(
            f"bad object prefix {prefix!r}: must be a relative path without '..', '.', "
            "empty parts or backslashes"
        )
    return prefix


def secret_names_under(prefix: str, ids: Iterable[str]) -> list[str]:
    """The secret names a backend lists: of the ids it holds (e.g. "agentenv/openai-key"),
    those under `prefix`, without it, that follow the secret name rules; sorted."""
    names = (i[len(prefix) :] for i in ids if i.startswith(prefix))
    return sorted(n for n in names if SECRET_RE.fullmatch(n))


def check_secret_name(name: object) -> str:
    """Secret names: a letter then letters, digits, `_` or `-` (valid on every secret backend)."""
    if not isinstance(name, str) or not SECRET_RE.fullmatch(name):
        raise StoreError(
            f"bad secret name {name!r}: use a letter followed by letters, digits, '_' or '-'"
        )
    return name
