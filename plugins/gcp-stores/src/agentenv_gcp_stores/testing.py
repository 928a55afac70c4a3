"""Test support: the emulators our tests (and `bench/cloud_stores.py`) run the real Google
clients against. Cloud Storage: `gcp-storage-emulator` in this process. Firestore: Google's
emulator (Java) as a child process group. Secret Manager: `SecretManagerServer`, a small REST
server implementing the calls the store makes. Artifact Registry: the local OCI registry.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_env.net import free_port
from agent_env.testing.require import on_ci

__all__ = ["on_ci"]

PROJECT = "agentenv-test"
FIRESTORE_EMULATOR = Path(
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator"
)
FIRESTORE_START_TIMEOUT = 60.0
FIRESTORE_START_ATTEMPTS = 3


def settings(endpoint: str, **extra: Any) -> dict[str, Any]:
    """Backend settings that reach an emulator at `endpoint` without credentials."""
    return {"project": PROJECT, "endpoint_url": endpoint, "anonymous": True, **extra}


@contextlib.contextmanager
def gcs_emulator() -> Iterator[str]:
    """`gcp-storage-emulator` in memory on a free loopback port; yields its URL."""
    from gcp_storage_emulator.server import create_server

    server = create_server("127.0.0.1", 0, in_memory=True)
    server.start()
    try:
        host, port = server._api._httpd.server_address[:2]
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def firestore_emulator_path() -> Path | None:
    found = os.environ.get("AGENTENV_FIRESTORE_EMULATOR")
    if found:
        return Path(found)
    if FIRESTORE_EMULATOR.exists():
        return FIRESTORE_EMULATOR
    on_path = shutil.which("cloud_firestore_emulator")
    return Path(on_path) if on_path else None


def _answers(proc: subprocess.Popen, url: str) -> str | None:
    """None once the emulator `proc` answers at `url`; else why not (it exited, or did not
    answer within FIRESTORE_START_TIMEOUT), its process group stopped."""
    deadline = time.monotonic() + FIRESTORE_START_TIMEOUT
    while True:
        if proc.poll() is not None:
            why = f"exited with {proc.returncode}"
            break
        try:
            with urllib.request.urlopen(url + "/", timeout=2) as r:
                if r.status == 200:
                    return None
        except OSError:
            pass
        if time.monotonic() > deadline:
            why = f"did not answer within {FIRESTORE_START_TIMEOUT} s"
            break
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    return why


@contextlib.contextmanager
def firestore_emulator(log: Path | None = None) -> Iterator[str]:
    """Google's Firestore emulator on a free port, in its own process group (its Java child
    outlives the wrapper script, so the whole group is stopped); yields `http://host:port`."""
    binary = firestore_emulator_path()
    if binary is None:
        raise RuntimeError(
            f"the Firestore emulator is not installed ({FIRESTORE_EMULATOR}); install the "
            "Debian package google-cloud-cli-firestore-emulator"
        )
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    # a free port can be taken by another process before the emulator binds it (Ray's head
    # opens many): an emulator that does not come up is started again on another port
    for attempt in range(FIRESTORE_START_ATTEMPTS):
        port = free_port()
        proc = subprocess.Popen(
            [str(binary), "start", "--host=127.0.0.1", f"--port={port}", f"--project_id={PROJECT}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        why = _answers(proc, url)
        if why is None:
            break
        if attempt == FIRESTORE_START_ATTEMPTS - 1:
            if not isinstance(out, int):
                out.close()
            raise RuntimeError(
                f"the Firestore emulator {why} ({FIRESTORE_START_ATTEMPTS} attempts)"
            )
    try:
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if not isinstance(out, int):  # a log file, not DEVNULL
            out.close()


class SecretManagerServer:
    """The Secret Manager v1 REST calls the `secretmanager` store makes (create secret, add,
    access and destroy versions, get, delete, list with a `name:` filter), in memory."""

    def __init__(self) -> None:
        self.secrets: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.requests = 0

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    self._send(400, _error(400, "INVALID_ARGUMENT", "body is not JSON"))
                    return
                with owner.lock:
                    owner.requests += 1
                    status, answer = owner.handle(method, url.path, query, body)
                self._send(status, answer)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join(5)

    def handle(
        self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        path = urllib.parse.unquote(path)
        parts = path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "v1" or parts[1] != "projects":
            return 404, _error(404, "NOT_FOUND", f"no such method {path}")
        rest = parts[3:]
        project = parts[2]
        if rest == ["secrets"] and method == "POST":
            secret_id = (query.get("secretId") or [""])[0]
            name = f"projects/{project}/secrets/{secret_id}"
            if not secret_id:
                return 400, _error(400, "INVALID_ARGUMENT", "secretId is required")
            if name in self.secrets:
                return 409, _error(409, "ALREADY_EXISTS", f"Secret [{name}] already exists.")
            self.secrets[name] = {"versions": []}
            return 200, {"name": name, "replication": body.get("replication", {})}
        if rest == ["secrets"] and method == "GET":
            wanted = (query.get("filter") or [""])[0]
            needle = wanted[len("name:") :] if wanted.startswith("name:") else ""
            names = sorted(
                n
                for n in self.secrets
                if n.startswith(f"projects/{project}/") and needle in n.rpartition("/")[2]
            )
            size = int((query.get("pageSize") or ["25"])[0] or 25)
            start = int((query.get("pageToken") or ["0"])[0] or 0)
            page = names[start : start + size]
            answer: dict[str, Any] = {"secrets": [{"name": n} for n in page]}
            if start + size < len(names):
                answer["nextPageToken"] = str(start + size)
            answer["totalSize"] = len(names)
            return 200, answer
        if len(rest) >= 2 and rest[0] == "secrets":
            secret_id, _, verb = rest[1].partition(":")
            name = f"projects/{project}/secrets/{secret_id}"
            secret = self.secrets.get(name)
            if secret is None:
                return 404, _error(404, "NOT_FOUND", f"Secret [{name}] not found.")
            if len(rest) == 2 and verb == "addVersion" and method == "POST":
                data = (body.get("payload") or {}).get("data", "")
                secret["versions"].append(base64.b64decode(data))
                number = len(secret["versions"])
                return 200, {"name": f"{name}/versions/{number}", "state": "ENABLED"}
            if len(rest) == 2 and not verb and method == "DELETE":
                del self.secrets[name]
                return 200, {}
            if len(rest) == 2 and not verb and method == "GET":
                return 200, {"name": name}
            if len(rest) == 4 and rest[2] == "versions":
                version, _, verb = rest[3].partition(":")
                versions = secret["versions"]
                index = len(versions) if version == "latest" else int(version or 0)
                if not 1 <= index <= len(versions):
                    return 404, _error(404, "NOT_FOUND", f"{name}/versions/{version} not found")
                if verb == "destroy" and method == "POST":
                    if versions[index - 1] is None:
                        return 400, _error(400, "FAILED_PRECONDITION", "already destroyed")
                    versions[index - 1] = None
                    return 200, {"name": f"{name}/versions/{index}", "state": "DESTROYED"}
                if verb != "access" or method != "GET" or versions[index - 1] is None:
                    return 404, _error(404, "NOT_FOUND", f"{name}/versions/{version} not found")
                data = versions[index - 1]
                return 200, {
                    "name": f"{name}/versions/{index}",
                    "payload": {"data": base64.b64encode(data).decode()},
                }
        return 404, _error(404, "NOT_FOUND", f"no such method {method} {path}")


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "status": status, "message": message}}
