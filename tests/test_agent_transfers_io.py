"""Moving bytes with transfer grants: `write_object` PUTs to a presigned HTTPS URL and
`read_object` reads it back through the real httpx client and real TLS (a local object store
with a certificate made for the test), checking the grant's limits, size, sha256 and expiry."""

from __future__ import annotations

import hashlib
import shutil
import socket
import ssl
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta

import anyio
import httpx
import pytest
import uvicorn

from agent_env.testing.require import require
from agentenv_protocol.agent import transfers as t


class Store:
    """PUT stores a body under its path (with its content type), GET returns it; a path under
    /down/ answers 503, a request without `x-sig: ok` 403 (a presigned URL's signature)."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[bytes, str]] = {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = scope["path"]
        status, data = 200, b""
        if path.startswith("/down/"):
            status = 503
        elif headers.get(b"x-sig") != b"ok":
            status = 403
        elif scope["method"] == "PUT":
            self.objects[path] = (body, headers.get(b"content-type", b"").decode())
        elif path in self.objects:
            data = self.objects[path][0]
        else:
            status = 404
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": data})


@pytest.fixture(scope="module")
def https_store(tmp_path_factory):
    require(None if shutil.which("openssl") else "openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    store = Store()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        store, ssl_certfile=str(cert), ssl_keyfile=str(key), log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the HTTPS store did not start"
    yield (
        store,
        f"https://127.0.0.1:{sock.getsockname()[1]}",
        ssl.create_default_context(cafile=str(cert)),
        cert,
    )
    server.should_exit = True
    thread.join(timeout=10)


def _grants(url: str, path: str, *, expires_in: float = 600, **read: object):
    expires = (datetime.now(UTC) + timedelta(seconds=expires_in)).isoformat()
    grant = {"url": url + path, "expires_at": expires, "headers": {"x-sig": "ok"}}
    write = t.parse(
        t.WriteObject,
        {
            "media_type": "application/octet-stream",
            "max_bytes": 64,
            "write": {**grant, "kind": "http-put"},
        },
    )
    get = {"media_type": "application/octet-stream", "max_bytes": 64, **read}
    return write, t.parse(t.ReadObject, {**get, "read": {**grant, "kind": "http-get"}})


def test_write_then_read_with_integrity(https_store):
    store, url, tls, _ = https_store
    data = b"snapshot bytes"
    digest = hashlib.sha256(data).hexdigest()
    write, read = _grants(url, "/snap/1", size_bytes=len(data), sha256=digest)

    async def go():
        async with httpx.AsyncClient(verify=tls) as client:
            uploaded = await t.write_object(write, data, client)
            return uploaded, await t.read_object(read, client)

    uploaded, back = anyio.run(go)
    assert uploaded == t.Uploaded(size_bytes=len(data), sha256=digest)
    assert back == data
    assert store.objects["/snap/1"] == (data, "application/octet-stream")


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("too_large_write", "transfer_too_large"),
        ("wrong_sha", "integrity_mismatch"),
        ("wrong_size", "integrity_mismatch"),
        ("expired", "grant_expired"),
        ("unsigned", "transfer_rejected"),
        ("store_down", "transfer_unavailable"),
    ],
)
def test_failures_carry_the_reference_codes(https_store, case, code):
    store, url, tls, _ = https_store
    store.objects["/obj"] = (b"12345", "application/octet-stream")
    write, read = _grants(url, "/obj")
    if case == "wrong_sha":
        _, read = _grants(url, "/obj", sha256="0" * 64)
    elif case == "wrong_size":
        _, read = _grants(url, "/obj", size_bytes=4)
    elif case == "expired":
        write, read = _grants(url, "/obj", expires_in=-1)
    elif case == "unsigned":
        read = t.parse(t.ReadObject, {**t.dump(read), "read": {**t.dump(read.read), "headers": {}}})
    elif case == "store_down":
        _, read = _grants(url, "/down/obj")

    async def go():
        async with httpx.AsyncClient(verify=tls) as client:
            if case in ("too_large_write", "expired"):
                await t.write_object(write, b"x" * (65 if case == "too_large_write" else 1), client)
            await t.read_object(read, client)

    with pytest.raises(t.TransferError) as failed:
        anyio.run(go)
    assert failed.value.code == code, failed.value
