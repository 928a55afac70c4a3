"""Layered redactors: an instance's redactor knows its run's secrets and its own, exactly as one
redactor over all of them would redact; what an instance adds leaves the process when the
instance ends, so a long-lived process keeps a bounded set of secrets."""

from __future__ import annotations

import gc
import random
import re

from agent_env import redact as redact_module
from agent_env.redact import REDACTED, Redactor, process_redactor


def one_pattern(values: set[str], text: str) -> str:
    """What a single pattern over every value (longest first) makes of `text`."""
    ordered = sorted(values, key=len, reverse=True)
    return re.sub("|".join(map(re.escape, ordered)), REDACTED, text)


def test_a_child_knows_its_parents_secrets_and_the_parent_never_learns_the_childs():
    run = Redactor(["run-secret-1"])
    instance = run.child()
    instance.add(["instance-token-1"])
    run.add(["run-secret-2"])  # added after the child was made: the child knows it too
    text = "run-secret-1 run-secret-2 instance-token-1"
    assert instance(text) == f"{REDACTED} {REDACTED} {REDACTED}"
    assert run(text) == f"{REDACTED} {REDACTED} instance-token-1"
    assert instance.secrets == {"run-secret-1", "run-secret-2", "instance-token-1"}
    assert instance.data(text.encode()) == instance(text).encode()


def test_layers_and_chunks_redact_exactly_as_one_pattern_over_every_value(monkeypatch):
    # small chunks, so one redactor spreads its values over several patterns too
    monkeypatch.setattr(redact_module, "CHUNK", 3)
    rng = random.Random(36)
    for _ in range(300):
        words = ["".join(rng.choices("abc", k=rng.randint(1, 4))) for _ in range(9)]
        run = Redactor(words[:3])
        instance = run.child()
        instance.add(words[3:])
        text = "".join(rng.choices("abcx", k=40))
        expected = one_pattern(set(words), text)
        assert instance(text) == expected, (words, text)
        assert instance.text(text) == expected
        assert instance.data(text.encode()) == expected.encode()
        assert instance({"k": [text]}) == {"k": [expected]}


def test_what_an_instance_adds_leaves_the_process_when_it_ends():
    before = process_redactor().secrets
    run = Redactor(["run-level-secret"])
    for i in range(500):
        instance = run.child()
        instance.add([f"token-of-instance-{i}", "run-level-secret"])
        assert f"token-of-instance-{i}" in process_redactor().secrets
        assert process_redactor().text(f"log token-of-instance-{i}") == f"log {REDACTED}"
        instance.close()
        # the instance's own redactor still redacts its values after it ended
        assert instance.text(f"token-of-instance-{i}") == REDACTED
    assert process_redactor().secrets == before | {"run-level-secret"}
    assert run.secrets == {"run-level-secret"}
    dropped = run.child()
    dropped.add(["never-closed-token"])
    del dropped
    gc.collect()
    assert "never-closed-token" not in process_redactor().secrets
    del run, instance
    gc.collect()
    assert process_redactor().secrets == before


def test_a_value_two_live_redactors_know_stays_until_both_are_gone():
    first, second = Redactor(["shared-secret-value"]), Redactor(["shared-secret-value"])
    first.close()
    assert "shared-secret-value" in process_redactor().secrets
    second.close()
    assert "shared-secret-value" not in process_redactor().secrets


def test_process_output_holds_back_what_may_begin_a_live_secret():
    instance = Redactor().child()
    instance.add(["abcdef-secret"])
    assert process_redactor().pending(b"output abcd") == 4
    assert process_redactor().pending(b"output xyz") == 0
    instance.close()
    assert process_redactor().pending(b"output abcd") == 0


def test_adding_recompiles_only_the_open_chunk():
    redactor = Redactor(f"secret-value-{i:05d}" for i in range(10 * redact_module.CHUNK))
    redactor("warm")  # the first use compiles every chunk once
    compiled = [c for c in redactor._patterns() if "text" in vars(c)]
    redactor.add(["one-more-secret"])
    assert redactor("one-more-secret and secret-value-00007") == f"{REDACTED} and {REDACTED}"
    after = redactor._patterns()
    assert all(c in after for c in compiled)  # the sealed ones were not rebuilt
    assert len(after) == len(compiled) + 1


def test_extending_with_a_sibling_layers_on_it_and_a_stranger_is_copied():
    run = Redactor(["run-secret"])
    held = run.child()
    held.add(["held-env-secret"])
    episode = run.child()
    episode.add(["episode-token"])
    episode.extend(held)
    held.add(["held-later-secret"])  # learned after the adoption: the episode knows it too
    text = "run-secret held-env-secret episode-token held-later-secret"
    assert episode(text) == " ".join([REDACTED] * 4)
    assert held(text) == f"{REDACTED} {REDACTED} episode-token {REDACTED}"
    assert run(text) == f"{REDACTED} held-env-secret episode-token held-later-secret"
    assert episode._own.values == {"episode-token"}  # layered, nothing copied

    # a redactor of another run's chain: its values are copied, the chain stays
    other = Redactor(["other-run-secret"]).child()
    other.add(["other-env-secret"])
    episode.extend(other)
    assert episode("other-run-secret other-env-secret run-secret") == " ".join([REDACTED] * 3)
    assert episode._parent is held

    # a top-level redactor (an instance kept with --keep uses the run's) is never re-parented
    top = Redactor(["top-secret"])
    top.extend(held)
    assert top._parent is None
    assert top("held-env-secret top-secret") == f"{REDACTED} {REDACTED}"
