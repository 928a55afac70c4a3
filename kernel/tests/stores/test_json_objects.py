"""`get_json`: an object a record names that a power loss left empty or cut short is reported
as such (with its size), not as a bare parse error; a whole one reads back; a missing one
raises what the store raises."""

from __future__ import annotations

import pytest

from agent_env.errors import StoreError
from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.json_objects import get_json


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_whole_empty_torn_and_missing_objects(tmp_path):
    store = FilesystemObjectStore(home=tmp_path)
    whole = b'{"events": [{"type": "user", "content": "hi"}], "response": "ok"}'
    await store.put("t/whole.json", whole)
    await store.put("t/empty.json", b"")
    await store.put("t/blank.json", b"  \n")
    await store.put("t/torn.json", whole[:30])
    await store.put("t/zeros.json", whole[:30] + b"\0" * 16)  # a tail the disk never wrote
    assert (await get_json(store, "t/whole.json"))["response"] == "ok"
    for key in ("t/empty.json", "t/blank.json"):
        with pytest.raises(StoreError, match=r"is empty \(\d bytes\)"):
            await get_json(store, key)
    with pytest.raises(StoreError, match=r"'t/torn.json' is torn \(30 bytes that are not whole"):
        await get_json(store, "t/torn.json")
    with pytest.raises(StoreError, match=r"'t/zeros.json' is torn \(46 bytes"):
        await get_json(store, "t/zeros.json")
    with pytest.raises(KeyError):
        await get_json(store, "t/never.json")
    await store.close()
