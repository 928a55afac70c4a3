"""The per-instance journal: one document per completed step (`journal/<instance>/<seq>`),
append-only, so a crashed run resumes from its last completed step."""

from __future__ import annotations

from typing import Any

from agent_env.errors import StoreError

COLLECTION = "journal"


def entry_key(instance_id: str, seq: int) -> str:
    return f"{instance_id}/{seq:08d}"


class Journal:
    """Appends entries with increasing sequence numbers; `create` (not `put`) so a second
    process resuming the same instance at once is detected instead of silently interleaved."""

    def __init__(self, documents: Any, instance_id: str, *, next_seq: int = 0):
        self.documents = documents
        self.instance_id = instance_id
        self.next_seq = next_seq

    @classmethod
    async def open(cls, documents: Any, instance_id: str) -> tuple[Journal, list[dict[str, Any]]]:
        """The journal of `instance_id` positioned after its last entry, and its entries."""
        rows = await documents.list(COLLECTION, f"{instance_id}/")
        entries = [doc for _key, doc in rows]
        next_seq = max((e["seq"] for e in entries), default=-1) + 1
        return cls(documents, instance_id, next_seq=next_seq), entries

    async def append(self, entry: dict[str, Any]) -> dict[str, Any]:
        seq = self.next_seq
        self.next_seq += 1
        doc = {"seq": seq, **entry}
        if not await self.documents.create(COLLECTION, entry_key(self.instance_id, seq), doc):
            raise StoreError(
                f"journal entry {seq} of task instance {self.instance_id!r} already exists: "
                "is another process resuming the same instance?"
            )
        return doc
