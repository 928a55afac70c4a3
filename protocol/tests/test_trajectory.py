"""The call log's redaction, with and without a file."""

import json

from agentenv_protocol.gateway import Trajectory, redact


def test_redaction_masks_secret_keys_and_known_values():
    entry = {
        "arguments": {
            "Password": "p",
            "api-key": "k",
            "note": "token=abc123 and abc123",
            "empty_token": "",
        },
        "result": {"content": [{"type": "text", "text": "abc123"}]},
        "n": 3,
    }
    assert redact(entry, ["abc123"]) == {
        "arguments": {
            "Password": "***",
            "api-key": "***",
            "note": "token=*** and ***",
            "empty_token": "",
        },
        "result": {"content": [{"type": "text", "text": "***"}]},
        "n": 3,
    }


def test_records_are_redacted_in_memory_and_on_disk(tmp_path):
    memory = Trajectory(secrets=["s3cret"])
    memory.add_secret("late-token")
    memory.record({"tool": "t", "arguments": {"x": "s3cret late-token"}})
    assert memory.records == [{"tool": "t", "arguments": {"x": "*** ***"}}]
    disk = Trajectory(tmp_path / "log.jsonl", secrets=["s3cret"])
    disk.record({"tool": "t", "arguments": {"secret_value": "v", "x": "s3cret"}})
    disk.close()
    assert json.loads((tmp_path / "log.jsonl").read_text()) == {
        "tool": "t",
        "arguments": {"secret_value": "***", "x": "***"},
    }


def test_secret_keys_are_masked_after_any_number_of_distinct_argument_names():
    # a long-lived gateway process sees ever new argument names; none may turn masking off
    for i in range(12_000):
        assert redact({f"field_{i}": "plain"}) == {f"field_{i}": "plain"}
    assert redact({"password": "hunter2", "api_key": "k-1"}) == {
        "password": "***",
        "api_key": "***",
    }


def test_the_log_file_masks_secrets_json_escapes_and_secret_keys_in_any_case(tmp_path):
    # the file's writer skips redaction for lines with nothing to mask; a secret that JSON
    # escapes (quote, backslash, newline, control char) or a secret key in any case is still found
    quoted, late = 'a"b\\c\nd\x01é', "late-token-9"
    log = Trajectory(tmp_path / "log.jsonl", secrets=[quoted])
    log.add_secret(late)
    entries = [
        {"tool": "echo", "arguments": {"text": "plain words"}},
        {"tool": "echo", "arguments": {"text": f"x{quoted}y"}},
        {"tool": "echo", "arguments": {"text": f"{late}!"}},
        {"tool": "echo", "arguments": {"PRIVATE-KEY": "k", "Authorization": "Bearer z"}},
        {"tool": "echo", "arguments": {"text": "n"}, "result": {"PassWd": "p"}},
    ]
    for entry in entries:
        log.record(entry)
    log.close()
    expected = [
        {"tool": "echo", "arguments": {"text": "plain words"}},
        {"tool": "echo", "arguments": {"text": "x***y"}},
        {"tool": "echo", "arguments": {"text": "***!"}},
        {"tool": "echo", "arguments": {"PRIVATE-KEY": "***", "Authorization": "***"}},
        {"tool": "echo", "arguments": {"text": "n"}, "result": {"PassWd": "***"}},
    ]
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == expected
    assert log.records == expected
    assert quoted not in (tmp_path / "log.jsonl").read_text()
