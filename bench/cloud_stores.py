"""Ops/s of each cloud store backend against its local emulator (figures, not pass/fail).

Run: .venv/bin/python bench/cloud_stores.py [--n 300] [--only aws|gcp]
The emulators are moto's server, gcp-storage-emulator, Google's Firestore emulator and the
Secret Manager test server (agentenv_*_stores.testing): the numbers measure our backends
plus the emulator and the loopback hop, not the real services' latency. Each op is one SDK
call through a worker thread, so "8 concurrent" shows how well a backend overlaps calls.
"""

from __future__ import annotations

import argparse
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from _timing import elapsed

from agent_env.stores.versioned import Entities

SMALL = {"step": "deploy", "status": "ok", "context": {"sandbox": "sbx-1", "n": 3}}
BLOB = bytes(range(256)) * 4


async def timed(
    label: str, n: int, op: Callable[[int], Awaitable[object]], workers: int = 1
) -> None:
    took = await elapsed(n, op, workers)
    print(f"  {label:<36} {n / took:>9,.0f} ops/s  {took / n * 1e3:>7.2f} ms/op", flush=True)


async def bench_documents(name: str, docs: Any, n: int) -> None:
    print(f"{name} (document)")
    c = "b" + uuid.uuid4().hex[:8]
    await timed("put (small doc)", n, lambda i: docs.put(c, f"k{i:08d}", SMALL))
    await timed("get", n, lambda i: docs.get(c, f"k{i:08d}"))
    await timed("create (new key)", n, lambda i: docs.create(c + "n", f"k{i:08d}", SMALL))
    await timed("create (existing key)", n, lambda i: docs.create(c + "n", f"k{i:08d}", SMALL))
    await timed("put, 8 concurrent", n, lambda i: docs.put(c + "p", f"k{i}", SMALL), workers=8)
    await timed(f"list (prefix, 10 of {n})", 50, lambda i: docs.list(c, "k0000001"))
    entities = Entities(docs)
    eid = uuid.uuid4().hex
    await timed(
        "entities put (changed, 1 id)", 50, lambda i: entities.put("b", eid, {}, digest=str(i))
    )
    await timed(
        "entities put (unchanged)", 50, lambda i: entities.put("b", eid + "u", {}, digest="s")
    )
    await docs.close()


async def bench_objects(name: str, objects: Any, n: int) -> None:
    print(f"{name} (object)")
    p = "b" + uuid.uuid4().hex[:8]
    await timed("put (1 KiB)", n, lambda i: objects.put(f"{p}/o{i}", BLOB))
    await timed("get (1 KiB)", n, lambda i: objects.get(f"{p}/o{i}"))
    await timed("exists", n, lambda i: objects.exists(f"{p}/o{i}"))
    await timed("put (1 KiB), 8 concurrent", n, lambda i: objects.put(f"{p}/c{i}", BLOB), workers=8)
    big = bytes(1 << 20)
    await timed("put (1 MiB)", 20, lambda i: objects.put(f"{p}/big{i}", big))
    await timed(f"list ({2 * n + 20} keys)", 10, lambda i: objects.list(p + "/"))
    await objects.close()


async def bench_secrets(name: str, secrets: Any, n: int) -> None:
    print(f"{name} (secret)")
    s = "b" + uuid.uuid4().hex[:8]
    await timed("set (new)", n, lambda i: secrets.set(f"{s}-{i}", "value"))
    await timed("set (existing)", n, lambda i: secrets.set(f"{s}-{i}", "rotated"))
    await timed("get", n, lambda i: secrets.get(f"{s}-{i}"))
    await secrets.close()


async def aws(n: int) -> None:
    from agentenv_aws_stores.dynamodb import DynamoDocumentStore
    from agentenv_aws_stores.s3 import S3ObjectStore
    from agentenv_aws_stores.secretsmanager import SecretsManagerStore
    from agentenv_aws_stores.testing import moto_server, settings

    with moto_server() as url:
        await bench_documents(
            "dynamodb @ moto", DynamoDocumentStore(settings(url, table="bench")), n
        )
        await bench_objects(
            "s3 @ moto", S3ObjectStore(settings(url, bucket="bench", create_bucket=True)), n
        )
        await bench_secrets("secretsmanager @ moto", SecretsManagerStore(settings(url)), n)


async def gcp(n: int) -> None:
    from agentenv_gcp_stores import testing
    from agentenv_gcp_stores.firestore import FirestoreDocumentStore
    from agentenv_gcp_stores.gcs import GcsObjectStore
    from agentenv_gcp_stores.secretmanager import SecretManagerStore

    with contextlib.ExitStack() as stack:
        fs = stack.enter_context(testing.firestore_emulator())
        gcs = stack.enter_context(testing.gcs_emulator())
        sm = stack.enter_context(testing.SecretManagerServer().serve())
        await bench_documents(
            "firestore @ emulator", FirestoreDocumentStore(testing.settings(fs)), n
        )
        await bench_objects(
            "gcs @ gcp-storage-emulator",
            GcsObjectStore(testing.settings(gcs, bucket="bench", create_bucket=True)),
            n,
        )
        await bench_secrets(
            "secretmanager @ test server", SecretManagerStore(testing.settings(sm)), n
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--only", choices=["aws", "gcp"])
    args = parser.parse_args()
    if args.only in (None, "aws"):
        anyio.run(aws, args.n)
    if args.only in (None, "gcp"):
        anyio.run(gcp, args.n)


if __name__ == "__main__":
    main()
