"""Test helpers for suites that need a Docker daemon (this plugin's and anyone else's).

`require_docker()` skips the calling test with a clear reason when no daemon answers, but on
CI (`CI=true`) it fails instead: a CI run that silently skipped every Docker test proves nothing.
`scripts/services.sh` starts the daemon, the base image and the local registry.
"""

from __future__ import annotations

import functools
import os

from agent_env.testing.require import on_ci, require

BASE_IMAGE = os.environ.get("AGENTENV_TEST_BASE_IMAGE", "agentenv/base:py3.11")
REGISTRY = os.environ.get("AGENTENV_TEST_REGISTRY", "127.0.0.1:5000")


__all__ = ["on_ci", "require_docker", "require_registry"]


@functools.cache
def docker_problem(image: str | None = None) -> str | None:
    """Why Docker tests cannot run here (None when the daemon answers and `image` exists)."""
    try:
        import docker
    except ImportError as e:  # pragma: no cover - the plugin depends on it
        return f"the docker SDK is not installed ({e})"
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as e:  # noqa: BLE001 - any failure means "no usable daemon"
        return f"no Docker daemon answers ({type(e).__name__}: {e}); run scripts/services.sh"
    if image:
        try:
            client.images.get(image)
        except Exception:  # noqa: BLE001
            return f"the image {image!r} is missing; scripts/services.sh builds it"
    return None


def registry_problem(address: str = REGISTRY) -> str | None:
    """Why the local OCI registry cannot be used (None when `/v2/` answers)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=3):
            return None
    except urllib.error.HTTPError as e:
        return None if e.code == 401 else f"registry {address} answered {e.code}"
    except OSError as e:
        return f"no OCI registry on {address} ({e}); run scripts/services.sh"


def require_docker(image: str | None = BASE_IMAGE) -> None:
    """Skip (locally) or fail (CI) the current test unless Docker and `image` are usable."""
    require(docker_problem(image))


def require_registry(address: str = REGISTRY) -> None:
    """Skip (locally) or fail (CI) the current test unless the local OCI registry answers."""
    require(registry_problem(address))


def ours(
    client,
    sandbox_id: str | None = None,
    *,
    run: str | None = None,
    home: str | os.PathLike | None = None,
) -> list[str]:
    """Names of containers and networks with our label, narrowed to one sandbox, one run id,
    or the sandboxes whose lease lives under `home` (other processes may use Docker too)."""
    if sandbox_id is not None:
        label = f"io.agentenv.sandbox={sandbox_id}"
    elif run is not None:
        label = f"io.agentenv.run={run}"
    else:
        label = "io.agentenv.managed"
    # the list answer itself (names, labels): `containers.list` inspects each container
    # after listing, and one removed in between (a reaper at work) raised NotFound
    containers = client.api.containers(all=True, filters={"label": label})
    if home is not None:
        prefix = str(home).rstrip("/") + "/"
        containers = [
            c
            for c in containers
            if ((c.get("Labels") or {}).get("io.agentenv.lease") or "").startswith(prefix)
        ]
    names = [(c.get("Names") or ["/"])[0].lstrip("/") for c in containers]
    if sandbox_id is None and home is None:
        names += [n.name for n in client.networks.list(filters={"label": label})]
    return names


TINY_IMAGE = "agentenv-test/tiny:1"


def tiny_image(ref: str = TINY_IMAGE) -> str:
    """A one-file image made in the local daemon (no registry involved), for image-store
    tests whose pushes should take milliseconds; returns `ref`."""
    import io
    import tarfile

    import docker

    client = docker.from_env(timeout=60)
    try:
        client.images.get(ref)
        return ref
    except docker.errors.ImageNotFound:
        pass
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = b"agent-env tiny test image\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repo, tag = ref.rsplit(":", 1)
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=tag)
    return ref


def registry_test_image() -> str:
    """`tiny_image()` once Docker and the local registry answer (skip, or fail on CI, if
    not): the image an image-store test pushes."""
    require_docker(None)
    require_registry()
    return tiny_image()
