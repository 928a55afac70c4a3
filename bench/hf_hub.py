"""Cost of resolving an hf:// bundle: first download, rerun of a branch, rerun of a pinned commit.

Publishes a repo with one bundle of N small files (plus unrelated data files) on a local Hub,
then resolves it three times with the real `huggingface_hub` client, printing time and requests.

    .venv/bin/python bench/hf_hub.py [--files 50] [--other 200]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50, help="files in the bundle")
    parser.add_argument("--other", type=int, default=200, help="repo files outside the bundle")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    os.environ.update(XDG_CACHE_HOME=tmp, HF_HOME=os.path.join(tmp, "hf"))
    from agentenv_hf_hub.source import fetch
    from agentenv_hf_hub.testing import LocalHub

    hub = LocalHub()
    repo = hub.create_repo("bench/bundles")
    files = {"README.md": "# bench\n"}
    files |= {f"bundles/b/tasks/t{i}.json": "[]" for i in range(args.files)}
    files |= {f"data/{i}.bin": "x" * 1000 for i in range(args.other)}
    commit = repo.commit(files)
    print(f"bundle of {args.files} files, {args.other} other repo files")
    with hub.serve() as endpoint:
        os.environ["HF_ENDPOINT"] = endpoint
        for label, spec in [
            ("first run (main)", "hf://bench/bundles"),
            ("rerun (main)", "hf://bench/bundles"),
            ("rerun (pinned commit)", f"hf://bench/bundles@{commit}"),
        ]:
            before = len(hub.log)
            start = time.perf_counter()
            with contextlib.redirect_stderr(io.StringIO()):
                got = fetch(spec)
            ms = (time.perf_counter() - start) * 1000
            print(
                f"{label:24s} {ms:8.1f} ms  requests {len(hub.log) - before:4d}  "
                f"downloaded {got.downloaded} files"
            )


if __name__ == "__main__":
    main()
