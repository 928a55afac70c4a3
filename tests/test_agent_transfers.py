"""Object-transfer request bodies: a bad one is refused naming the field and the rule; a good
one dumps to the body the existing SDK sends (timestamps as `...Z`, absent fields left out).
The agreement with the existing SDK itself is in test_agent_extensions_compat.py."""

from __future__ import annotations

import pytest

from agentenv_protocol.agent import transfers as t

GET = {"kind": "http-get", "url": "https://store.example/o", "expires_at": "2026-12-04T19:00:00Z"}
OBJ = {"media_type": "application/octet-stream", "max_bytes": 8, "read": GET}


def _refusal(cls, body) -> str:
    with pytest.raises(t.TransferRequestError) as refused:
        t.parse(cls, body)
    return str(refused.value)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"objects": {"trajectory": {**OBJ, "size_bytes": 9}}}, "size_bytes must not exceed"),
        ({"objects": {"trajectory": {**OBJ, "max_bytes": True}}}, "must be an integer"),
        ({"objects": {"trajectory": {**OBJ, "max_bytes": "8"}}}, "must be an integer"),
        ({"objects": {"trajectory": {**OBJ, "media_type": "text"}}}, "concrete MIME type"),
        ({"objects": {"trajectory": {**OBJ, "sha256": "F" * 64}}}, "64 lowercase hex"),
        (
            {"objects": {"trajectory": {**OBJ, "read": {**GET, "url": "ftp://x/y"}}}},
            "absolute HTTPS URL",
        ),
        (
            {"objects": {"trajectory": {**OBJ, "read": {**GET, "expires_at": "tomorrow"}}}},
            "RFC 3339",
        ),
        ({"objects": {"trajectory": {**OBJ, "media_type": "application/json"}}}, "octet-stream"),
        ({"objects": {"trajectory": OBJ}, "target": "x"}, "extra fields found (target)"),
    ],
)
def test_a_bad_load_request_names_the_field(body, says):
    message = _refusal(t.ObjectSnapshotLoadRequest, body)
    assert says in message, message
    assert message.count("ObjectSnapshotLoadRequest") >= 1


def test_changelog_order_and_namespace_paths():
    inc = {"object": OBJ}
    unordered = {"increments": [{**inc, "sequence": 2}, {**inc, "sequence": 1}]}
    assert "strictly increasing" in _refusal(t.ObjectChangelogApplyRequest, unordered)
    post = {"kind": "http-post-policy", "url": "https://s/", "fields": {}, "path_field": "k"}
    grant = {
        "root_path": "a/../b",
        "expires_at": "2026-12-04T19:00:00Z",
        "max_objects": 1,
        "max_object_bytes": 1,
        "max_total_bytes": 1,
        "write": {**post, "file_field": "f"},
    }
    message = _refusal(t.NamespaceChangelogEnableRequest, {"write_namespace": grant})
    assert "normalized relative POSIX path" in message and "write_namespace" in message


def test_dump_is_the_body_to_send():
    request = t.parse(t.ObjectSnapshotLoadRequest, {"objects": {"trajectory": OBJ}})
    assert t.dump(request) == {"objects": {"trajectory": OBJ}}
    assert t.parse(t.ObjectSnapshotLoadRequest, t.dump(request)) == request
