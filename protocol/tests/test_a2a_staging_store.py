"""The staging extension on a real server (uvicorn in a thread): objects moved with our transfer
helpers (`upload`, `download`, `NamespaceUploader`) under grants naming the agent's own URL,
the loopback detour those grants take, the byte limit under concurrent writes and broken
uploads, and the paths and ids it refuses."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentenv_protocol import transfers
from agentenv_protocol.a2a_agent import (
    STAGING_V1_URI,
    AgentEnvAgent,
    AgentIdentity,
    StagingStore,
    TaskRequest,
    TaskResult,
    a2a_agent,
    custom_extension,
    staging_routes,
)
from agentenv_protocol.serving import serve_in_thread
from agentenv_protocol.transfers import (
    HttpGetGrant,
    HttpPostPolicyGrant,
    HttpPutGrant,
    NamespaceUploader,
    ReadObject,
    WriteNamespaceGrant,
    WriteObject,
)

pytestmark = pytest.mark.anyio
ID = "run-4c1b2f0e9a7d4e3b8c6a"  # 24 characters, as AgentEnv makes them
LIMIT = 64 * 1024


@a2a_agent(identity=AgentIdentity(name="stager", description="test", version="1"))
class Stager(AgentEnvAgent):
    async def run(self, request: TaskRequest) -> TaskResult:
        return TaskResult.text("ok")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = StagingStore(max_bytes=LIMIT, root=tmp_path_factory.mktemp("staging"))
    running = serve_in_thread(Starlette(routes=staging_routes(store)))
    yield store, running.url
    running.stop()


@pytest.fixture
def clean(server):
    store, url = server
    yield store, url
    store.close()


def _expiry() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


async def test_objects_go_in_and_out_with_the_transfer_helpers(clean, tmp_path) -> None:
    store, url = clean
    body = os.urandom(40_000)
    staged = f"{url}/ext/staging/{ID}"
    put = HttpPutGrant(kind="http-put", url=f"{staged}/in/blob", expires_at=_expiry())
    uploaded = await transfers.upload(
        WriteObject(media_type="application/x-tar", max_bytes=len(body), write=put), body
    )
    get = HttpGetGrant(kind="http-get", url=f"{staged}/in/blob", expires_at=_expiry())
    read = ReadObject(
        media_type="application/x-tar",
        max_bytes=len(body),
        size_bytes=len(body),
        sha256=uploaded.sha256,
        read=get,
    )
    await transfers.download(read, tmp_path / "blob")
    policy = HttpPostPolicyGrant(
        kind="http-post-policy",
        url=f"{staged}/out",
        fields={"policy": "p", "x-signature": "s"},
        path_field="key",
        file_field="file",
    )
    namespace = NamespaceUploader(
        WriteNamespaceGrant(
            root_path="changes/run-1",
            expires_at=_expiry(),
            max_objects=2,
            max_object_bytes=100,
            max_total_bytes=200,
            write=policy,
        )
    )
    for position in ("000000.tar", "000003.tar"):
        await namespace.upload(position, position.encode())
    async with httpx.AsyncClient() as http:
        listing = (await http.get(f"{staged}/out/")).json()["objects"]
        served = await http.get(f"{staged}/in/blob")

    assert (tmp_path / "blob").read_bytes() == body
    assert uploaded.sha256 == hashlib.sha256(body).hexdigest()
    assert served.headers["content-type"] == "application/x-tar"
    assert [entry["path"] for entry in listing] == [
        "changes/run-1/000000.tar",
        "changes/run-1/000003.tar",
    ]
    assert store.used_bytes == len(body) + 2 * len("000000.tar")


async def test_a_grant_naming_its_holders_staging_goes_there_over_loopback(
    clean, monkeypatch
) -> None:
    store, url = clean
    port = httpx.URL(url).port
    path = f"/ext/staging/{ID}/via-loopback"
    # The public URL cannot be reached from here: only the loopback detour can deliver.
    public = f"https://agent.invalid{path}"
    header = {transfers.STAGING_PATH_HEADER: path}
    grant = HttpPutGrant(kind="http-put", url=public, expires_at=_expiry(), headers=header)
    target = WriteObject(media_type="text/plain", max_bytes=10, write=grant)

    monkeypatch.setenv("A2A_PORT", str(port))
    await transfers.upload(target, b"by env")
    monkeypatch.setenv("A2A_PORT", "1")  # wrong, but the request being served knows better
    with transfers.serving_on(port):
        await transfers.upload(target, b"by port")

    assert store.get(ID, "via-loopback").size_bytes == len(b"by port")
    assert transfers.loopback_url(public + "?x=1", {"agentenv-staging-path": path}) == (
        f"http://127.0.0.1:1{path}?x=1"
    )
    assert transfers.loopback_url(public, {transfers.STAGING_PATH_HEADER: "/ext/other"}) is None


async def test_the_limit_holds_under_concurrent_writes(clean) -> None:
    store, url = clean
    size = LIMIT // 2 + 1  # two fit in the limit only one at a time
    statuses: list[int] = []

    async def put(name: str) -> None:
        async with httpx.AsyncClient() as http:
            response = await http.put(f"{url}/ext/staging/{ID}/{name}", content=b"x" * size)
            statuses.append(response.status_code)

    async with anyio.create_task_group() as group:
        for name in ("a", "b", "c"):
            group.start_soon(put, name)
    async with httpx.AsyncClient() as http:
        cleared = await http.delete(f"{url}/ext/staging/{ID}/")

    assert sorted(statuses) == [201, 413, 413]
    assert cleared.status_code == 204 and store.used_bytes == 0


def test_an_upload_cut_off_midway_leaves_nothing_and_frees_its_room(clean) -> None:
    store, url = clean
    port = httpx.URL(url).port
    with socket.create_connection(("127.0.0.1", port)) as sock:
        head = f"PUT /ext/staging/{ID}/cut HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
        sock.sendall(head.encode() + b"only part of it")
    deadline = time.monotonic() + 5
    while store.used_bytes and time.monotonic() < deadline:
        time.sleep(0.02)

    assert store.used_bytes == 0
    assert not any(store.incoming_dir.iterdir())
    assert httpx.get(f"{url}/ext/staging/{ID}/cut").status_code == 404


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"{ID[:21]}/a", 404),  # 21 characters: guessable
        (f"{ID}/a/%2e%2e/b", 400),
        (f"{ID}/%2E/a", 400),  # encoded, since clients fold a literal "."
        (f"{ID}/a%00b", 400),
        (f"{ID}/a%5Cb", 400),
        (f"{ID}/", 400),  # an object's path is not a prefix
    ],
)
def test_a_put_to_a_guessable_id_or_an_unnormalized_path_is_refused(
    clean, path: str, status: int
) -> None:
    store, url = clean
    response = httpx.put(f"{url}/ext/staging/{path}", content=b"x")
    assert response.status_code == status
    assert store.used_bytes == 0 and not any(store.objects_dir.iterdir())


def test_a_form_upload_refuses_escaping_keys_and_files_without_one(clean) -> None:
    store, url = clean
    target = f"{url}/ext/staging/{ID}/ns"
    answers = [
        httpx.post(target, data={"key": key}, files={"file": ("f", b"x")}).status_code
        for key in ("../x", "/abs", "a//b", "a\\b")
    ]
    answers.append(httpx.post(target, files={"file": ("f", b"x")}).status_code)
    answers.append(
        httpx.post(target, content=b"key=a", headers={"content-type": "text/plain"}).status_code
    )
    answers.append(
        httpx.post(target, data={"key": "k" * 70_000}, files={"file": ("f", b"x")}).status_code
    )

    assert answers == [400, 400, 400, 400, 400, 400, 413]
    assert httpx.get(f"{target}/").json() == {"objects": []}


def test_deletes_match_the_tag_they_were_given(clean) -> None:
    _, url = clean
    base = f"{url}/ext/staging/{ID}"
    first = httpx.put(f"{base}/doc", content=b"v1").json()["etag"]
    httpx.put(f"{base}/doc", content=b"v2")
    stale = httpx.delete(f"{base}/doc", headers={"if-match": first})
    missing = httpx.delete(f"{base}/nothing")
    fresh = httpx.delete(
        f"{base}/doc", headers={"if-match": '"' + hashlib.sha256(b"v2").hexdigest() + '"'}
    )

    assert (stale.status_code, missing.status_code, fresh.status_code) == (412, 404, 204)


def test_ids_are_kept_apart(clean) -> None:
    _, url = clean
    other = "x" * 22
    httpx.put(f"{url}/ext/staging/{ID}/a", content=b"mine")
    assert httpx.get(f"{url}/ext/staging/{other}/a").status_code == 404
    assert httpx.get(f"{url}/ext/staging/{other}/").json() == {"objects": []}
    httpx.delete(f"{url}/ext/staging/{other}/")
    assert httpx.get(f"{url}/ext/staging/{ID}/a").content == b"mine"


def test_the_store_keeps_to_private_directories_and_its_own_goes_with_the_process(
    tmp_path,
) -> None:
    script = (
        "from agentenv_protocol.a2a_agent import StagingStore\n"
        "s = StagingStore(max_bytes=10)\n"
        "print(s.root, oct(s.root.stat().st_mode & 0o777), oct(s.objects_dir.stat().st_mode & 0o777))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTENV_STAGING_DIR"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    root, root_mode, objects_mode = out.stdout.split()

    assert (root_mode, objects_mode) == ("0o700", "0o700")
    assert not Path(root).exists()


def test_a_store_that_stages_nothing_makes_no_directory(tmp_path) -> None:
    """An agent's app builds a store whether or not anything is ever staged; a killed agent
    server cannot remove a directory, so none is made until the first object is."""
    script = (
        "import os, sys\n"
        "from agentenv_protocol.a2a_agent import StagingStore\n"
        "s = StagingStore(max_bytes=10)\n"
        "print(len(os.listdir(sys.argv[1])))\n"
        "s.objects_dir\n"
        "print(len(os.listdir(sys.argv[1])))\n"
        "os._exit(0)  # killed: no clean-up runs\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENTENV_STAGING_DIR"}
    env["TMPDIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["0", "1"], out.stderr


def test_the_sdk_agent_serves_staging_unless_turned_off(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("AGENTENV_STAGING_DIR", str(tmp_path))
    with TestClient(Stager().create_app()) as client:
        card = client.get("/.well-known/agent-card.json").json()
        stored = client.put(f"/ext/staging/{ID}/x", content=b"1")
    monkeypatch.setenv("AGENTENV_STAGING_MAX_BYTES", "0")
    with TestClient(Stager().create_app()) as client:
        off_card = client.get("/.well-known/agent-card.json").json()
        off = client.put(f"/ext/staging/{ID}/x", content=b"1")
    monkeypatch.setenv("AGENTENV_STAGING_MAX_BYTES", "16G")
    with pytest.raises(ValueError, match="AGENTENV_STAGING_MAX_BYTES='16G'"):
        Stager().create_app()

    uris = [e["uri"] for e in card["capabilities"]["extensions"]]
    assert STAGING_V1_URI in uris and stored.status_code == 201
    assert STAGING_V1_URI not in [e["uri"] for e in off_card["capabilities"]["extensions"]]
    assert off.status_code == 404


def test_an_agent_route_under_staging_is_refused_by_name(monkeypatch) -> None:
    @a2a_agent(identity=AgentIdentity(name="squatter", description="test", version="1"))
    class Squatter(AgentEnvAgent):
        async def run(self, request: TaskRequest) -> TaskResult:
            return TaskResult.text("ok")

        @custom_extension(uri="urn:x:mine/v1", operation="get", method="GET", path="/ext/staging")
        async def mine(self):
            return {}

    with pytest.raises(
        ValueError, match=r"Squatter: .* at /ext/staging conflicts with the staging"
    ):
        Squatter().create_app()


def test_a_read_under_way_survives_a_delete(tmp_path) -> None:
    """8 MiB is more than the sockets buffer: most of it is read from the file after the delete."""
    store = StagingStore(max_bytes=8 << 20, root=tmp_path)
    running = serve_in_thread(Starlette(routes=staging_routes(store)))
    body = os.urandom(8 << 20)
    target = f"{running.url}/ext/staging/{ID}/big"
    try:
        assert httpx.put(target, content=body).status_code == 201
        with httpx.Client() as http, http.stream("GET", target) as reading:
            chunks = reading.iter_bytes(4096)
            received = bytearray(next(chunks))
            assert http.delete(target).status_code == 204
            assert not any(store.objects_dir.iterdir())  # the file is gone from the directory
            for chunk in chunks:
                received += chunk
        gone = httpx.get(target).status_code
    finally:
        running.stop()

    assert bytes(received) == body and reading.headers["content-length"] == str(len(body))
    assert store.used_bytes == 0 and gone == 404
