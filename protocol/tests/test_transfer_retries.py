"""Transfer failures carry a code (status, retryable) and transient ones are tried again, at
most three times while the grant lasts, against a real object store stand-in (uvicorn in a
thread) scripted to fail the way stores do: 503s, refusals, stalls, a connection cut mid-body."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentenv_protocol import transfers
from agentenv_protocol.serving import serve_in_thread
from agentenv_protocol.transfers import (
    HttpGetGrant,
    HttpPostPolicyGrant,
    HttpPutGrant,
    NamespaceUploader,
    ReadObject,
    TransferError,
    WriteNamespaceGrant,
    WriteObject,
    download,
    upload,
)

pytestmark = pytest.mark.anyio
BODY = b"0123456789" * 100


class FlakyStore:
    """Answers each request with the next scripted behaviour (then 200/201), keeping bodies."""

    def __init__(self) -> None:
        self.script: list[Any] = []
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        step = self.script.pop(0) if self.script else "ok"
        if step == "stall":
            await asyncio.sleep(2)
            step = 200
        if step == "cut":  # promise the whole object, send half, drop the connection
            head = [(b"content-length", str(len(BODY)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            await send({"type": "http.response.body", "body": BODY[:300], "more_body": True})
            raise RuntimeError("connection cut")
        status = 200 if step == "ok" else step
        content = BODY if scope["method"] == "GET" else b""
        head = [(b"content-length", str(len(content)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": content})


@pytest.fixture(scope="module")
def store():
    flaky = FlakyStore()
    running = serve_in_thread(flaky)
    yield flaky, running.url
    running.stop()


@pytest.fixture
def flaky(store, monkeypatch):
    monkeypatch.setattr(transfers, "_RETRY_BACKOFF_SECONDS", 0)
    fake, url = store
    fake.script.clear()
    fake.bodies.clear()
    return fake, url


def _expiry(seconds: float = 300) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


def _write(url: str) -> WriteObject:
    grant = HttpPutGrant(kind="http-put", url=f"{url}/o", expires_at=_expiry())
    return WriteObject(media_type="application/octet-stream", max_bytes=len(BODY), write=grant)


def _read(url: str, sha: str | None = None) -> ReadObject:
    grant = HttpGetGrant(kind="http-get", url=f"{url}/o", expires_at=_expiry())
    return ReadObject(
        media_type="application/octet-stream",
        max_bytes=len(BODY),
        size_bytes=len(BODY),
        sha256=sha or hashlib.sha256(BODY).hexdigest(),
        read=grant,
    )


async def test_a_transient_failure_is_tried_again_with_the_source_read_again(
    flaky, tmp_path: Path
) -> None:
    fake, url = flaky
    source = tmp_path / "object"
    source.write_bytes(BODY)
    fake.script[:] = [503, 429]
    uploaded = await upload(_write(url), source)
    assert fake.bodies == [BODY] * 3 and uploaded.size_bytes == len(BODY)


async def test_three_failures_end_it_with_a_retryable_error(flaky) -> None:
    fake, url = flaky
    fake.script[:] = [502, 503, 500, 500]
    with pytest.raises(TransferError) as failed:
        await upload(_write(url), BODY)
    error = failed.value
    assert (error.code, error.status_code, error.retryable) == ("transfer_unavailable", 502, True)
    assert len(fake.bodies) == 3
    assert error.body()["error"]["code"] == "transfer_unavailable"
    assert url not in str(error)


async def test_a_refusal_is_not_tried_again(flaky) -> None:
    fake, url = flaky
    fake.script[:] = [403]
    with pytest.raises(TransferError) as failed:
        await upload(_write(url), BODY)
    assert (failed.value.code, failed.value.retryable, len(fake.bodies)) == (
        "transfer_rejected",
        False,
        1,
    )


async def test_a_stalled_store_is_a_timeout_and_the_next_attempt_lands(flaky, monkeypatch) -> None:
    fake, url = flaky
    monkeypatch.setattr(transfers, "TRANSFER_TIMEOUT", httpx.Timeout(0.5))
    fake.script[:] = ["stall"]
    await upload(_write(url), BODY)
    fake.script[:] = ["stall", "stall", "stall"]
    with pytest.raises(TransferError) as failed:
        await upload(_write(url), BODY)
    assert (failed.value.code, failed.value.status_code) == ("transfer_timeout", 504)


async def test_a_download_cut_midway_starts_over_and_lands_whole(flaky, tmp_path: Path) -> None:
    fake, url = flaky
    fake.script[:] = ["cut"]
    path = await download(_read(url), tmp_path / "object")
    assert path.read_bytes() == BODY and sorted(p.name for p in tmp_path.iterdir()) == ["object"]
    assert len(fake.bodies) == 2  # the cut attempt, then the whole one


async def test_a_digest_mismatch_is_final_and_leaves_no_file(flaky, tmp_path: Path) -> None:
    fake, url = flaky
    with pytest.raises(TransferError) as failed:
        await download(_read(url, sha="0" * 64), tmp_path / "object")
    assert (failed.value.code, failed.value.status_code) == ("integrity_mismatch", 422)
    assert len(fake.bodies) == 1 and not any(tmp_path.iterdir())


async def test_an_expired_grant_is_not_tried(flaky) -> None:
    fake, url = flaky
    grant = HttpPutGrant(kind="http-put", url=f"{url}/o", expires_at=_expiry(-1))
    target = WriteObject(media_type="text/plain", max_bytes=10, write=grant)
    with pytest.raises(TransferError) as failed:
        await upload(target, b"x")
    assert (failed.value.code, failed.value.status_code, fake.bodies) == ("grant_expired", 410, [])


async def test_a_namespace_counts_an_object_written_again_once(flaky) -> None:
    fake, url = flaky
    policy = HttpPostPolicyGrant(
        kind="http-post-policy", url=f"{url}/ns", fields={}, path_field="key", file_field="file"
    )
    grant = WriteNamespaceGrant(
        root_path="log",
        expires_at=_expiry(),
        max_objects=2,
        max_object_bytes=100,
        max_total_bytes=150,
        write=policy,
    )
    uploader = NamespaceUploader(grant)
    fake.script[:] = [503]
    await uploader.upload("a", b"x" * 60)
    await uploader.upload("a", b"x" * 70)  # replaces a: 70 counted, not 130
    await uploader.upload("b", b"x" * 80)
    with pytest.raises(TransferError) as full:
        await uploader.upload("c", b"x")
    assert (uploader.objects, uploader.total_bytes) == (2, 150)
    assert (full.value.code, full.value.status_code) == ("transfer_too_large", 413)
    assert len(fake.bodies) == 4  # one retried post, then one each


def test_an_unknown_code_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown transfer error code 'oops'; known: invalid"):
        TransferError("oops", "message")
    late = TransferError("transfer_timeout", "slow", retryable=False)
    assert (late.status_code, late.retryable, str(late)) == (504, False, "slow")


def test_a_transfer_failing_in_an_agent_operation_answers_with_its_code(flaky) -> None:
    from starlette.testclient import TestClient

    from agentenv_protocol.a2a_agent import (
        AgentEnvAgent,
        AgentIdentity,
        TaskRequest,
        TaskResult,
        a2a_agent,
        custom_extension,
    )

    fake, url = flaky

    @a2a_agent(identity=AgentIdentity(name="exporter", description="test", version="1"))
    class Exporter(AgentEnvAgent):
        async def run(self, request: TaskRequest) -> TaskResult:
            return TaskResult.text("ok")

        @custom_extension(uri="urn:x:export/v1", operation="push", method="POST", path="/ext/push")
        async def push(self) -> dict:
            await upload(_write(url), BODY)
            return {"pushed": True}

    fake.script[:] = [403]
    with TestClient(Exporter().create_app()) as client:
        refused = client.post("/ext/push")
    assert refused.status_code == 502
    assert refused.json()["error"]["code"] == "transfer_rejected"
    assert refused.json()["error"]["retryable"] is False and url not in refused.text
