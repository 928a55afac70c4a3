"""In-tree backends and where they come from, so a missing plugin fails with the exact install."""

from __future__ import annotations

#: (registry kind, name) -> the pip command that installs the plugin providing it.
_AWS = "pip install 'agentenv-framework[aws]'"
_GCP = "pip install 'agentenv-framework[gcp]'"
_DOCKER = "pip install agentenv-docker-sandbox  (included in: pip install agentenv-framework)"

KNOWN_BACKENDS: dict[tuple[str, str], str] = {
    ("object", "s3"): _AWS,
    ("document", "dynamodb"): _AWS,
    ("secret", "secretsmanager"): _AWS,
    ("image", "ecr"): _AWS,
    ("object", "gcs"): _GCP,
    ("document", "firestore"): _GCP,
    ("secret", "secretmanager"): _GCP,
    ("image", "artifactregistry"): _GCP,
    ("image", "docker"): _DOCKER,
    ("sandbox provider", "docker"): _DOCKER,
}


def install_hint(kind: str, name: str) -> str | None:
    """The pip command for an in-tree backend `name` of `kind`, or None when we don't ship it."""
    hint = KNOWN_BACKENDS.get((kind, name))
    if hint is None:
        for (_, known), cmd in KNOWN_BACKENDS.items():
            if known == name:
                return cmd
    return hint
