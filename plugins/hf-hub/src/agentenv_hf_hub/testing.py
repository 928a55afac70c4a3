"""A local stand-in for the Hugging Face Hub, for tests that run the real `huggingface_hub` client.

It serves in-memory dataset repos (commits, branches, tags; public, gated or private) on
127.0.0.1 and logs every request, so a test can assert what the client asked for. With a
token it accepts, it also takes writes: create a repo, a branch, a commit (`testing_writes`). Needs
starlette and uvicorn (installed with agentenv-framework-protocol)::

    hub = LocalHub()
    repo = hub.create_repo("org/demo")
    sha = repo.commit({"README.md": "# demo", "tasks/t.json": "[]"})
    with hub.serve() as endpoint:      # set HF_ENDPOINT=endpoint
        ...
    assert not hub.downloads()
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from urllib.parse import unquote

import attrs


@attrs.frozen(kw_only=True)
class HubRequest:
    """One request the local Hub answered: `kind` is revision, tree, refs, head or download,
    or a write: create, branch, preupload, commit (and validate-yaml, the card check)."""

    method: str
    path: str
    kind: str
    repo: str
    revision: str | None = None
    file: str | None = None
    status: int = 200
    authorized: bool = False


@attrs.define
class HubRepo:
    """A dataset repo: snapshots keyed by commit sha, plus branch and tag refs."""

    repo_id: str
    gated: bool = False
    private: bool = False
    commits: dict[str, dict[str, bytes]] = attrs.Factory(dict)
    branches: dict[str, str] = attrs.Factory(dict)
    tags: dict[str, str] = attrs.Factory(dict)

    def commit(
        self, files: Mapping[str, str | bytes], *, branch: str = "main", keep: bool = False
    ) -> str:
        """Commit `files` onto `branch` (replacing its tree unless `keep`); return the commit sha."""
        tree = dict(self.commits[self.branches[branch]]) if keep and branch in self.branches else {}
        tree.update({p: c.encode() if isinstance(c, str) else c for p, c in files.items()})
        parent = self.branches.get(branch, "")
        digest = hashlib.sha1(
            parent.encode() + json.dumps(sorted((p, c.hex()) for p, c in tree.items())).encode()
        )
        sha = digest.hexdigest()
        self.commits[sha] = tree
        self.branches[branch] = sha
        return sha

    def branch(self, name: str, commit: str) -> None:
        self.branches[name] = commit

    def tag(self, name: str, commit: str) -> None:
        self.tags[name] = commit

    def resolve(self, revision: str) -> str | None:
        if revision in self.branches:
            return self.branches[revision]
        if revision in self.tags:
            return self.tags[revision]
        if revision in self.commits:
            return revision
        return None


def _blob_sha(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@attrs.define
class LocalHub:
    """The server state: repos, accepted tokens, and the request log."""

    repos: dict[str, HubRepo] = attrs.Factory(dict)
    tokens: set[str] = attrs.Factory(set)
    log: list[HubRequest] = attrs.Factory(list)
    failing: dict[str, int] = attrs.Factory(dict)
    """File paths whose downloads answer this HTTP status (404 as EntryNotFound), to test failures."""

    def create_repo(self, repo_id: str, *, gated: bool = False, private: bool = False) -> HubRepo:
        repo = HubRepo(repo_id=repo_id, gated=gated, private=private)
        self.repos[repo_id] = repo
        return repo

    def requests(self, kind: str | None = None, repo: str | None = None) -> list[HubRequest]:
        return [
            r
            for r in self.log
            if (kind is None or r.kind == kind) and (repo is None or r.repo == repo)
        ]

    def downloads(self, repo: str | None = None) -> list[HubRequest]:
        """File requests (HEAD or GET on resolve/): what a cache hit must not make."""
        return [
            r
            for r in self.log
            if r.kind in ("head", "download") and (repo is None or r.repo == repo)
        ]

    @contextlib.contextmanager
    def serve(self, timeout: float = 10.0) -> Iterator[str]:
        """Serve on a free 127.0.0.1 port in a background thread; yield the endpoint URL."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(self.asgi, log_level="warning", lifespan="off", interface="asgi3")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("local Hub server did not start")
            time.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(timeout)
            sock.close()

    async def asgi(self, scope, receive, send) -> None:
        from starlette.requests import Request

        request = Request(scope, receive)
        body = await request.body() if request.method == "POST" else b""
        response = self._handle(request, body)
        await response(scope, receive, send)

    def _handle(self, request, body: bytes = b""):
        from starlette.responses import JSONResponse, Response

        raw = request.scope.get("raw_path") or request.url.path.encode()
        parts = [unquote(p) for p in raw.decode().split("?")[0].split("/")[1:]]
        method = request.method
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        authorized = token in self.tokens

        def record(
            kind: str,
            repo: str,
            *,
            revision: str | None = None,
            file: str | None = None,
            status: int = 200,
        ) -> None:
            self.log.append(
                HubRequest(
                    method=method,
                    path=request.url.path,
                    kind=kind,
                    repo=repo,
                    revision=revision,
                    file=file,
                    status=status,
                    authorized=authorized,
                )
            )

        def error(status: int, code: str, message: str, kind: str, repo: str, **headers: str):
            record(kind, repo, revision=rev, file=file, status=status)
            body = b"" if method == "HEAD" else json.dumps({"error": message}).encode()
            return Response(
                body,
                status_code=status,
                media_type="application/json",
                headers={"X-Error-Code": code, "X-Error-Message": message, **headers},
            )

        rev = file = None
        if method == "POST":
            return self._write(request, parts, body, authorized, record)
        if len(parts) == 4 and parts[:2] == ["api", "datasets"]:
            kind, repo_id = "revision", f"{parts[2]}/{parts[3]}"
        elif (
            len(parts) >= 5
            and parts[:2] == ["api", "datasets"]
            and parts[4] in ("revision", "tree", "refs")
        ):
            kind, repo_id = parts[4], f"{parts[2]}/{parts[3]}"
            rev = parts[5] if len(parts) > 5 else None
            file = "/".join(parts[6:]) or None
        elif len(parts) >= 6 and parts[0] == "datasets" and parts[3] == "resolve":
            kind = "head" if method == "HEAD" else "download"
            repo_id, rev, file = f"{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:])
        else:
            return error(404, "NotFound", f"no route for {request.url.path}", "unknown", "")

        repo = self.repos.get(repo_id)
        if repo is None or (repo.private and not authorized):
            return error(
                401 if not authorized else 404,
                "RepoNotFound",
                "Repository not found",
                kind,
                repo_id,
            )
        if repo.gated and not authorized and kind in ("head", "download"):
            status = 403 if token else 401
            return error(
                status, "GatedRepo", f"Access to dataset {repo_id} is restricted.", kind, repo_id
            )
        if kind == "refs":
            record(kind, repo_id)

            def ref(prefix, name, sha):
                return {"name": name, "ref": f"refs/{prefix}/{name}", "targetCommit": sha}

            return JSONResponse(
                {
                    "branches": [ref("heads", n, s) for n, s in repo.branches.items()],
                    "tags": [ref("tags", n, s) for n, s in repo.tags.items()],
                    "converts": [],
                }
            )
        commit = repo.resolve(rev or "main")
        if commit is None:
            return error(404, "RevisionNotFound", f"Invalid rev id: {rev}", kind, repo_id)
        tree = repo.commits[commit]
        if kind == "revision":
            record(kind, repo_id, revision=rev)
            return JSONResponse(
                {
                    "_id": hashlib.md5(repo_id.encode()).hexdigest()[:24],
                    "id": repo_id,
                    "author": repo_id.split("/")[0],
                    "sha": commit,
                    "private": repo.private,
                    "gated": "auto" if repo.gated else False,
                    "disabled": False,
                    "downloads": 0,
                    "likes": 0,
                    "tags": [],
                    "lastModified": "2026-01-01T00:00:00.000Z",
                    "siblings": [{"rfilename": p} for p in sorted(tree)],
                }
            )
        if kind == "tree":
            record(kind, repo_id, revision=rev, file=file)
            prefix = f"{file}/" if file else ""
            recursive = request.query_params.get("recursive") in ("1", "true", "True")
            entries, dirs = [], set()
            for p in sorted(tree):
                if not p.startswith(prefix):
                    continue
                rest = p[len(prefix) :].split("/")
                for i in range(1, len(rest) if recursive else min(len(rest), 2)):
                    dirs.add(prefix + "/".join(rest[:i]))
                if recursive or len(rest) == 1:
                    entries.append(
                        {"type": "file", "oid": _blob_sha(tree[p]), "size": len(tree[p]), "path": p}
                    )
            entries += [
                {"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(dirs)
            ]
            return JSONResponse(entries)
        if file in self.failing:
            status = self.failing[file]
            code = "EntryNotFound" if status == 404 else ""
            return error(
                status, code, "simulated failure", kind, repo_id, **{"X-Repo-Commit": commit}
            )
        if file not in tree:
            return error(
                404,
                "EntryNotFound",
                f"{file} does not exist on {rev}",
                kind,
                repo_id,
                **{"X-Repo-Commit": commit},
            )
        record(kind, repo_id, revision=rev, file=file)
        content = tree[file]
        headers = {
            "X-Repo-Commit": commit,
            "ETag": f'"{_blob_sha(content)}"',
            "Content-Length": str(len(content)),
        }
        body = b"" if method == "HEAD" else content
        return Response(body, headers=headers, media_type="application/octet-stream")

    def _write(self, request, parts: list[str], body: bytes, authorized: bool, record):
        """create (`/api/repos/create`), branch, preupload and commit; a token is required."""
        from starlette.responses import JSONResponse

        from agentenv_hf_hub import testing_writes as writes

        if parts[:3] == ["api", "repos", "create"]:
            kind, repo_id, rev = "create", "", ""
        elif parts == ["api", "validate-yaml"]:  # a README.md upload checks its card first
            record("validate-yaml", "")
            return JSONResponse({"errors": [], "warnings": []})
        elif len(parts) >= 6 and parts[:2] == ["api", "datasets"]:
            kind, repo_id, rev = parts[4], f"{parts[2]}/{parts[3]}", "/".join(parts[5:])
        else:
            kind, repo_id, rev = "unknown", "", ""
        base = f"{request.url.scheme}://{request.url.netloc}"
        try:
            if kind not in ("create", "branch", "preupload", "commit"):
                raise writes.WriteRefused(404, "NotFound", f"no route for {request.url.path}")
            if not authorized:
                raise writes.WriteRefused(401, "", "Invalid credentials in Authorization header")
            if kind == "create":
                repo_id = writes.created_repo_id(body)
                url = f"{base}/datasets/{repo_id}"
                if repo_id in self.repos:  # the Hub's conflict answer carries the url too
                    record(kind, repo_id, status=409)
                    message = "You already created this dataset repo"
                    return JSONResponse({"error": message, "url": url}, status_code=409)
                self.create_repo(repo_id).commit(dict(writes.INITIAL_FILES))
                record(kind, repo_id)
                return JSONResponse({"url": url, "name": repo_id})
            repo = self.repos.get(repo_id)
            if repo is None:
                raise writes.WriteRefused(404, "RepoNotFound", "Repository not found")
            if kind == "branch":
                if rev in repo.branches:
                    raise writes.WriteRefused(409, "", f"Reference {rev} already exists")
                start = writes.json_body(body).get("startingPoint") or "main"
                start_commit = repo.resolve(start)
                if start_commit is None:
                    raise writes.WriteRefused(404, "RevisionNotFound", f"Invalid rev id: {start}")
                repo.branch(rev, start_commit)
                record(kind, repo_id, revision=rev)
                return JSONResponse({})
            if rev not in repo.branches:
                raise writes.WriteRefused(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            if kind == "preupload":
                record(kind, repo_id, revision=rev)
                return JSONResponse(writes.preupload_answer(body))
            tree, _ = writes.apply_commit(repo.commits[repo.branches[rev]], body)
            sha = repo.commit(tree, branch=rev)
            record(kind, repo_id, revision=rev)
            return JSONResponse(
                {"commitUrl": f"{base}/datasets/{repo_id}/commit/{sha}", "commitOid": sha}
            )
        except writes.WriteRefused as refused:
            from starlette.responses import Response

            record(kind, repo_id, revision=rev or None, status=refused.status)
            headers = {"X-Error-Message": str(refused)}
            if refused.code:
                headers["X-Error-Code"] = refused.code
            return Response(
                json.dumps({"error": str(refused)}).encode(),
                status_code=refused.status,
                media_type="application/json",
                headers=headers,
            )
