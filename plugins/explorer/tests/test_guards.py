"""The explorer's guards: loopback by default, foreign Host headers refused (DNS rebinding),
cross-site writes refused (CSRF), a token required when bound beyond loopback, security
headers on every answer; and `agent-env up` itself (no config, a busy port, a token URL)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest


def test_foreign_host_is_refused(client) -> None:
    answer = client.get("/api/v1/runs", headers={"Host": "evil.example"})
    assert answer.status_code == 421
    assert answer.json() == {"detail": "host 'evil.example' not allowed"}
    assert client.get("/health", headers={"Host": "localhost:8234"}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
    ],
)
def test_cross_site_writes_are_refused_and_start_nothing(client, headers) -> None:
    before = client.get("/api/v1/runs").json()["total"]
    answer = client.post("/api/v1/runs", json={"spec": "hello"}, headers=headers)
    assert answer.status_code == 403
    assert answer.json() == {"detail": "cross-site request refused"}
    assert client.get("/api/v1/runs").json()["total"] == before


def test_same_origin_writes_pass_the_guard(client) -> None:
    headers = {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8234"}
    answer = client.post("/api/v1/runs", json={"spek": "x"}, headers=headers)
    assert answer.status_code == 400  # past the guard: refused by the API for its body


def test_security_headers_on_pages_and_api(client) -> None:
    for path in ("/", "/api/v1/runs", "/static/app.js"):
        answer = client.get(path)
        assert answer.status_code == 200
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "no-referrer"


def test_a_token_is_required_when_bound_beyond_loopback(client_factory) -> None:
    with client_factory(
        bind_host="10.1.2.3", token="s3cret-token", allowed_hosts=["explorer.lan"]
    ) as client:
        assert client.get("/api/v1/runs").status_code == 401
        assert "token" in client.get("/api/v1/runs").json()["detail"]
        bad = client.get("/api/v1/runs", headers={"Authorization": "Bearer wrong"})
        assert bad.status_code == 401
        ok = client.get("/api/v1/runs", headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200
        page = client.get("/?token=s3cret-token", headers={"Host": "explorer.lan"})
        assert page.status_code == 200
        assert "HttpOnly" in page.headers["set-cookie"]
        # the cookie the page set lets its own requests through
        assert client.get("/api/v1/runs").status_code == 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_up_without_a_config_says_how_to_make_one(project, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [project.agent_env, "up"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "no .agentenv/config.toml found" in done.stderr
    assert "touch .agentenv/config.toml" in done.stderr


def test_up_on_a_busy_port_says_so(project) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = project.cli("up", "--port", str(port), timeout=60)
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr


def test_up_on_port_zero_prints_the_port_it_bound(project) -> None:
    """`up --port 0 --json` printed `http://127.0.0.1:0/`: the URL names the port the system
    chose, and the explorer answers there, to its token only (loopback included)."""
    proc = subprocess.Popen(
        [project.agent_env, "up", "--port", "0", "--json"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = json.loads(proc.stdout.readline())["url"]
        base, _, token = url.partition("/?token=")
        port = int(base.rsplit(":", 1)[1])
        assert base == f"http://127.0.0.1:{port}" and port > 0 and len(token) >= 32
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/v1/runs?token={token}", timeout=2) as a:
                    assert json.load(a)["total"] >= 1
                break
            except urllib.error.HTTPError:
                raise
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                time.sleep(0.1)
        # on loopback too: any local process (a sandboxed agent shares the loopback) needs it
        for path in ("/api/v1/runs", "/api/v1/tasks", "/"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(base + path, timeout=5)
            assert refused.value.code == 401, path
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_up_beyond_loopback_prints_a_token_url_and_enforces_it(project) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [project.agent_env, "up", "--host", "0.0.0.0", "--port", str(port), "--json"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(proc.stdout.readline())
        assert "?token=" in info["url"]
        token = info["url"].split("?token=")[1]
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{base}/health?token={token}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.1)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/api/v1/runs", timeout=5)
        assert refused.value.code == 401
        with urllib.request.urlopen(f"{base}/api/v1/runs?token={token}", timeout=5) as answer:
            assert json.load(answer)["total"] >= 1
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_up_on_another_loopback_address_answers_its_own_url(project) -> None:
    """`up --host 127.0.0.2` answered 421 to the URL it printed: the bound host is always
    allowed, and a foreign Host is still refused."""
    port = _free_port()
    proc = subprocess.Popen(
        [project.agent_env, "up", "--host", "127.0.0.2", "--port", str(port), "--json"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = json.loads(proc.stdout.readline())["url"]
        assert url.startswith(f"http://127.0.0.2:{port}/?token=")
        base, _, token = url.partition("/?token=")
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(
                    f"{base}/api/v1/runs?token={token}", timeout=2
                ) as answer:
                    assert answer.status == 200 and "total" in json.load(answer)
                break
            except urllib.error.HTTPError:
                raise
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                time.sleep(0.1)
        foreign = urllib.request.Request(url, headers={"Host": f"evil.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(foreign, timeout=5)
        assert refused.value.code == 421
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
