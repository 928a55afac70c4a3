"""The hf:// source against a local Hub, through the real huggingface_hub client."""

from __future__ import annotations

import json
import socket

import pytest

from agent_env.errors import BundleError
from agentenv_hf_hub.card import parse_card
from agentenv_hf_hub.source import HubUnavailable, fetch

TASK = json.dumps([{"id": "hi", "type": "run_code", "code": "print('hi')"}])
OTHER_FILES = {"data/train.jsonl": '{"x": 1}\n' * 50, "scripts/publish.py": "print('publish')\n"}


def card(front: str = "", title: str = "demo") -> str:
    return (
        f"---\n{front}---\n" if front else ""
    ) + f"# {title}\n\nA demo dataset of agent-env bundles.\n"


def bundle(name: str, prefix: str = "bundles/") -> dict[str, str]:
    return {
        f"{prefix}{name}/README.md": f"{name}: a tiny bundle\n",
        f"{prefix}{name}/tasks/{name}.json": TASK,
        f"{prefix}{name}/artifacts/greeting/greeting.txt": f"hello from {name}\n",
    }


def downloaded_files(hub, repo=None) -> set[str]:
    return {r.file for r in hub.requests("download", repo)}


@pytest.fixture
def demo(hub):
    """org/demo: one bundle under bundles/ plus files that are not part of it."""
    repo = hub.create_repo("org/demo")
    repo.commit({"README.md": card(), **bundle("hello"), **OTHER_FILES})
    return repo


def test_main_branch_downloads_only_the_bundle_and_card(endpoint, hub, demo, cache, capsys):
    got = fetch("hf://org/demo")
    commit = demo.branches["main"]
    folder = cache / "org" / "demo" / commit
    assert got.path == folder / "bundles" / "hello"
    assert (got.path / "tasks" / "hello.json").read_text() == TASK
    assert (folder / "README.md").read_text().startswith("# demo")
    assert not (folder / "data").exists() and not (folder / "scripts").exists()
    assert downloaded_files(hub) == {"README.md", *bundle("hello")}
    assert got.name == "hello"
    assert got.id_prefix == "@hf/org/demo/hello"
    assert got.provenance | {"endpoint": None} == {
        "source": "hf",
        "spec": "hf://org/demo",
        "endpoint": None,
        "repo": "org/demo",
        "revision": "main",
        "commit": commit,
        "path": "bundles/hello",
        "bundle": "hello",
        "plugins": [],
        "setup": None,
        "pinned_spec": f"hf://org/demo@{commit}/bundles/hello",
        "offline": False,
    }
    assert not any(p.name.startswith(".staging") for p in (cache / "org" / "demo").iterdir())
    assert not (folder / ".cache").exists()
    err = capsys.readouterr().err
    assert "org/demo" in err and commit in err and "'hello'" in err


def test_second_run_of_a_branch_downloads_nothing(endpoint, hub, demo):
    first = fetch("hf://org/demo")
    before = len(hub.downloads())
    second = fetch("hf://org/demo")
    assert second.path == first.path and second.downloaded == 0
    assert len(hub.downloads()) == before
    assert len(hub.requests("revision")) == 2


def test_second_run_of_a_commit_makes_no_request(endpoint, hub, demo):
    commit = demo.branches["main"]
    first = fetch(f"hf://org/demo@{commit}")
    assert first.downloaded == 4 and first.provenance["commit"] == commit
    requests = len(hub.log)
    second = fetch(f"hf://org/demo@{commit}")
    assert second.path == first.path and second.downloaded == 0
    assert len(hub.log) == requests


def test_branch_tag_commit_and_encoded_branch_resolve_to_their_commits(endpoint, hub):
    repo = hub.create_repo("org/revs")
    v1 = repo.commit({"README.md": card(), **bundle("hello")})
    repo.tag("v1.0", v1)
    v2 = repo.commit(
        {"README.md": card(), **bundle("hello"), "bundles/hello/tasks/more.json": TASK}
    )
    repo.branch("feature/new-task", v2)
    v3 = repo.commit({"README.md": card(), **bundle("hello")}, branch="dev")
    cases = {
        "hf://org/revs": v2,
        "hf://org/revs@v1.0": v1,
        "hf://org/revs@dev": v3,
        "hf://org/revs@feature%2Fnew-task": v2,
        f"hf://org/revs@{v1}": v1,
        "hf://org/revs@feature%2Fnew-task/bundles/hello": v2,
    }
    for spec, commit in cases.items():
        got = fetch(spec)
        assert got.provenance["commit"] == commit, spec
        assert got.path.parent.parent.name == commit
    assert fetch("hf://org/revs@feature%2Fnew-task").provenance["revision"] == "feature/new-task"
    assert (fetch("hf://org/revs@v1.0").path / "tasks" / "more.json").exists() is False
    assert "feature/new-task" in {r.revision for r in hub.requests("revision")}


def test_several_bundles_take_the_cards_default(endpoint, hub):
    front = "agentenv:\n  default: second\n"
    hub.create_repo("org/multi").commit(
        {"README.md": card(front), **bundle("first"), **bundle("second")}
    )
    got = fetch("hf://org/multi")
    assert got.name == "second" and got.id_prefix == "@hf/org/multi/second"
    assert downloaded_files(hub) == {"README.md", *bundle("second")}
    assert fetch("hf://org/multi/bundles/first").name == "first"


def test_several_bundles_without_default_list_them(endpoint, hub):
    hub.create_repo("org/multi").commit(
        {"README.md": card(), **bundle("first"), **bundle("second")}
    )
    with pytest.raises(BundleError) as err:
        fetch("hf://org/multi")
    text = str(err.value)
    assert "several bundles" in text and "agentenv: default" in text
    assert (
        "first (hf://org/multi/bundles/first)" in text
        and "second (hf://org/multi/bundles/second)" in text
    )
    assert downloaded_files(hub) == {"README.md"}


def test_a_default_that_names_no_bundle_is_an_error(endpoint, hub):
    front = "agentenv:\n  default: secnd\n"
    hub.create_repo("org/multi").commit(
        {"README.md": card(front), **bundle("first"), **bundle("second")}
    )
    with pytest.raises(
        BundleError, match=r"default bundle 'secnd' is not in the repo \(did you mean 'second'\?\)"
    ):
        fetch("hf://org/multi")


def test_root_bundle_takes_the_repos_name(endpoint, hub, cache):
    repo = hub.create_repo("org/rootbundle")
    root = {"tasks/solo.json": TASK, "envs/calc/env.toml": "type = 'mcp_server'\n"}
    commit = repo.commit({"README.md": card(title="root"), **root, **OTHER_FILES})
    got = fetch("hf://org/rootbundle")
    assert got.path == cache / "org" / "rootbundle" / commit
    assert got.name == "rootbundle" and got.id_prefix == "@hf/org/rootbundle"
    assert got.provenance["path"] == ""
    assert downloaded_files(hub) == {"README.md", "tasks/solo.json", "envs/calc/env.toml"}


def test_several_bundles_without_default_fall_back_to_a_root_bundle(endpoint, hub):
    hub.create_repo("org/both").commit(
        {"README.md": card(), "tasks/t.json": TASK, **bundle("a"), **bundle("b")}
    )
    assert fetch("hf://org/both").name == "both"


def test_a_repo_without_bundles_is_an_error(endpoint, hub):
    hub.create_repo("org/plain").commit({"README.md": card(), **OTHER_FILES})
    with pytest.raises(BundleError, match="holds no bundle"):
        fetch("hf://org/plain")


def test_missing_repo_revision_and_path(endpoint, hub, demo):
    with pytest.raises(
        BundleError, match="dataset repo org/nope not found.*hf auth login.*HF_TOKEN"
    ):
        fetch("hf://org/nope")
    with pytest.raises(
        BundleError,
        match=r"revision 'mian' not found in dataset org/demo \(did you mean 'main'\?\)",
    ):
        fetch("hf://org/demo@mian")
    with pytest.raises(
        BundleError, match=r"no folder 'bundles/helo'.*\(did you mean 'bundles/hello'\?\)"
    ):
        fetch("hf://org/demo/bundles/helo")
    with pytest.raises(BundleError, match="folder 'data' is not a bundle"):
        fetch("hf://org/demo@main/data")
    assert downloaded_files(hub) == {"README.md"}


def test_gated_repo_needs_a_token(endpoint, hub, monkeypatch, token):
    hub.create_repo("org/gated", gated=True).commit({"README.md": card(), **bundle("hello")})
    with pytest.raises(BundleError) as err:
        fetch("hf://org/gated")
    assert (
        "gated" in str(err.value)
        and "hf auth login" in str(err.value)
        and "HF_TOKEN" in str(err.value)
    )
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    with pytest.raises(BundleError, match="your Hugging Face token has no access"):
        fetch("hf://org/gated")
    monkeypatch.setenv("HF_TOKEN", token)
    got = fetch("hf://org/gated")
    assert (got.path / "tasks" / "hello.json").exists()
    assert all(r.authorized for r in hub.downloads() if r.status == 200)


def test_private_repo_without_token_says_how_to_log_in(endpoint, hub, monkeypatch, token):
    hub.create_repo("org/secret", private=True).commit({"README.md": card(), **bundle("hello")})
    with pytest.raises(
        BundleError, match="if it is private or gated, run `hf auth login` or set HF_TOKEN"
    ):
        fetch("hf://org/secret")
    monkeypatch.setenv("HF_TOKEN", token)
    assert fetch("hf://org/secret").name == "hello"


def test_card_plugins_unmet_stop_before_the_bundle_downloads(endpoint, hub):
    front = (
        "agentenv:\n  bundles:\n    hello:\n"
        '      plugins: ["agentenv-example>=1.2", "agentenv-hf-hub>=99"]\n'
        "      setup: agent-env example setup\n"
    )
    hub.create_repo("org/needs").commit({"README.md": card(front), **bundle("hello")})
    with pytest.raises(BundleError) as err:
        fetch("hf://org/needs")
    text = str(err.value)
    assert "needs plugin 'agentenv-example>=1.2', which is not installed" in text
    assert "needs plugin 'agentenv-hf-hub>=99'; installed: agentenv-hf-hub 1.0.0" in text
    assert "setup: agent-env example setup" in text and "the dataset card" in text
    assert downloaded_files(hub) == {"README.md"}


def test_card_plugins_met_run(endpoint, hub):
    front = "agentenv:\n  bundles:\n    hello:\n      plugins: [agentenv-hf-hub>=1.0, huggingface_hub]\n"
    hub.create_repo("org/needs").commit({"README.md": card(front), **bundle("hello")})
    got = fetch("hf://org/needs")
    assert got.provenance["plugins"] == ["agentenv-hf-hub>=1.0", "huggingface_hub"]


def test_bundle_toml_requirements_win_over_the_card(endpoint, hub):
    front = "agentenv:\n  bundles:\n    hello:\n      plugins: [agentenv-hf-hub]\n      setup: pip install x\n"
    files = {
        "README.md": card(front),
        **bundle("hello"),
        "bundles/hello/bundle.toml": '[requires]\nplugins = ["agentenv-missing-thing>=2"]\n',
    }
    hub.create_repo("org/toml").commit(files)
    with pytest.raises(BundleError) as err:
        fetch("hf://org/toml")
    assert "needs plugin 'agentenv-missing-thing>=2', which is not installed" in str(err.value)
    assert "bundles/hello/bundle.toml" in str(err.value) and "setup: pip install x" in str(
        err.value
    )
    assert downloaded_files(hub) == {"README.md", "bundles/hello/bundle.toml"}


def test_bundle_toml_requirements_met_override_unmet_card_plugins(endpoint, hub):
    front = "agentenv:\n  bundles:\n    hello:\n      plugins: [agentenv-not-there]\n"
    files = {
        "README.md": card(front),
        **bundle("hello"),
        "bundles/hello/bundle.toml": 'plugins = ["agentenv-hf-hub>=1"]\n',
    }
    hub.create_repo("org/toml").commit(files)
    got = fetch("hf://org/toml")
    assert (got.path / "bundle.toml").exists() and (got.path / "tasks" / "hello.json").exists()


def test_bundle_toml_requirements_honour_markers(endpoint, hub):
    toml = 'plugins = ["agentenv-missing-thing; python_version < \'3\'", "agentenv-hf-hub>=1"]\n'
    files = {"README.md": card(), **bundle("hello"), "bundles/hello/bundle.toml": toml}
    hub.create_repo("org/marker").commit(files)
    assert (fetch("hf://org/marker").path / "tasks" / "hello.json").exists()


def test_pinned_spec_reloads_the_same_commit_after_the_branch_moves(endpoint, hub, demo):
    first = fetch("hf://org/demo")
    demo.commit({"README.md": card(), **bundle("hello"), "bundles/hello/tasks/new.json": TASK})
    again = fetch(first.provenance["pinned_spec"])
    assert again.path == first.path and again.provenance["commit"] == first.provenance["commit"]
    assert (
        fetch("hf://org/demo").provenance["commit"]
        == demo.branches["main"]
        != first.provenance["commit"]
    )


def test_offline_hub_uses_the_cached_commit(hub, demo, cache, monkeypatch, capsys):
    with hub.serve() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        first = fetch("hf://org/demo")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", closed)
    again = fetch("hf://org/demo")
    assert again.path == first.path and again.provenance["offline"] is True
    assert "Hub unreachable" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert fetch("hf://org/demo").path == first.path
    with pytest.raises(
        HubUnavailable, match=r"cannot reach the Hub.*no commit of org/demo@v2 is cached"
    ):
        fetch("hf://org/demo@v2")


def test_offline_hub_without_a_cached_commit_is_a_clear_error(cache, monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{sock.getsockname()[1]}")
    with pytest.raises(
        HubUnavailable,
        match=r"cannot reach the Hub at http://127\.0\.0\.1:\d+ .*run it once while online",
    ):
        fetch("hf://org/demo")


@pytest.mark.parametrize(
    "evil", ["bundles/hello/../../../../escaped.txt", "/etc/evil", "bundles/hello/./x"]
)
def test_files_that_would_escape_the_cache_are_rejected(endpoint, hub, cache, evil):
    hub.create_repo("org/evil").commit({"README.md": card(), **bundle("hello"), evil: "gotcha"})
    with pytest.raises(BundleError, match="would escape the cache folder") as err:
        fetch("hf://org/evil")
    assert repr(evil) in str(err.value)
    assert hub.downloads() == []
    assert not (cache.parent.parent / "escaped.txt").exists()


@pytest.mark.parametrize(
    "spec, message",
    [
        ("hf://org", "with an org and a repo name"),
        ("hf://org/", "with an org and a repo name"),
        ("hf://org/repo@", "empty revision"),
        ("hf://org/repo/../x", "must be a plain folder path"),
        ("hf://../repo", "with an org and a repo name"),
    ],
)
def test_malformed_specs(cache, spec, message):
    with pytest.raises(BundleError, match=message):
        fetch(spec)


def test_invalid_card_front_matter_names_the_problem(endpoint, hub):
    front = "agentenv:\n  defualt: hello\n  bundles:\n    hello:\n      plugin: [x]\n"
    hub.create_repo("org/badcard").commit({"README.md": card(front), **bundle("hello")})
    with pytest.raises(BundleError) as err:
        fetch("hf://org/badcard")
    text = str(err.value)
    assert "agentenv: unknown key 'defualt' (did you mean 'default'?)" in text
    assert "agentenv.bundles.hello: unknown key 'plugin' (did you mean 'plugins'?)" in text


@pytest.mark.parametrize(
    "front, problems",
    [
        ("agentenv:\n  default: 5\n", ["agentenv.default: expected a string, got 5"]),
        (
            "agentenv:\n  bundles: [hello]\n",
            ["agentenv.bundles: expected an object, got ['hello']"],
        ),
        (
            "agentenv:\n  bundles:\n    hello: [x]\n",
            ["agentenv.bundles.hello: expected an object, got ['x']"],
        ),
        (
            "agentenv:\n  bundles:\n    hello:\n      plugins: [3]\n      setup: [make]\n",
            [
                "agentenv.bundles.hello.plugins[0]: expected a string, got 3",
                "agentenv.bundles.hello.setup: expected a string, got ['make']",
            ],
        ),
    ],
)
def test_card_values_of_the_wrong_type(front, problems):
    with pytest.raises(BundleError) as err:
        parse_card(card(front), where="hf://org/x README.md")
    assert sorted(err.value.problems) == problems


def test_card_shorthands():
    front = "agentenv:\n  default: hello\n  bundles:\n    hello:\n      plugins: acme\n    2:\n"
    parsed = parse_card(card(front), where="README.md")
    assert parsed.default == "hello"
    assert parsed.meta("hello").plugins == ("acme",)
    assert parsed.meta("2") == parsed.meta("absent")
    assert parse_card(card("agentenv:\n  bundles:\n"), where="README.md").bundles == {}


def test_a_failed_download_adds_nothing_and_a_retry_completes(endpoint, hub, demo, cache):
    hub.failing["bundles/hello/tasks/hello.json"] = 403
    stale = cache / "org" / "demo" / ".staging-left-by-a-crash"
    stale.mkdir(parents=True)
    with pytest.raises(BundleError, match=r"hf://org/demo: the Hub refused the request: .*403"):
        fetch("hf://org/demo")
    folder = cache / "org" / "demo" / demo.branches["main"]
    assert not (folder / "bundles").exists()
    assert not stale.exists()
    hub.failing.clear()
    got = fetch("hf://org/demo")
    assert (got.path / "tasks" / "hello.json").read_text() == TASK
    assert [
        p.name for p in (cache / "org" / "demo").iterdir() if p.name.startswith(".staging")
    ] == []


def test_a_listed_file_the_hub_does_not_serve_is_named(endpoint, hub, demo):
    hub.failing["bundles/hello/artifacts/greeting/greeting.txt"] = 404
    with pytest.raises(
        BundleError,
        match="file 'bundles/hello/artifacts/greeting/greeting.txt' not found in dataset org/demo",
    ):
        fetch("hf://org/demo")
