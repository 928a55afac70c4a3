"""The distributions as a user installs them: every workspace distribution is built as a wheel,
then installed with empty tool and cache folders (local wheels via --find-links, third-party
dependencies from the real index) and `agent-env run hello` runs: `uv tool install
agentenv-framework` (the meta-distribution provides the executable) and `uvx --from
agentenv-framework agent-env` (without uv's "not provided by package" warning). The README's
user installs run as written; every wheel carries LICENSE and NOTICE; the version pins keep
an index with other distributions of our names out."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from agent_env.testing.require import require

pytestmark = pytest.mark.network  # installs from the package index

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], env: dict[str, str], timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    uv = shutil.which("uv")
    require(None if uv else "uv is not on PATH")
    base = tmp_path_factory.mktemp("dists")
    (base / "dist").mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))},
        "UV_CACHE_DIR": str(base / "uvcache"),
        "UV_TOOL_DIR": str(base / "tools"),
        "UV_TOOL_BIN_DIR": str(base / "bin"),
        "AGENT_ENV_HOME": str(base / "home"),
        "UV_FIND_LINKS": str(base / "dist"),
    }
    built = run([uv, "build", "--all-packages", "--wheel", "-o", str(base / "dist"), "-q"], env)
    assert built.returncode == 0, built.stderr
    assert len(list((base / "dist").glob("*.whl"))) >= 8
    return uv, base, env


def test_uv_tool_install_of_the_meta_distribution_runs_hello(fresh):
    uv, base, env = fresh
    installed = run([uv, "tool", "install", "agentenv-framework"], env)
    if installed.returncode != 0 and "network" in installed.stderr.lower():
        require(f"the package index is unreachable: {installed.stderr[-300:]}")
    assert installed.returncode == 0, installed.stderr
    assert "Installed 1 executable: agent-env" in installed.stderr + installed.stdout
    hello = run([str(base / "bin" / "agent-env"), "run", "hello"], env)
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.startswith("hello  passed (hello: 1)")


def test_uvx_from_the_meta_distribution_runs_hello_without_a_warning(fresh):
    uv, _, env = fresh
    hello = run(
        [uv, "tool", "run", "--from", "agentenv-framework", "agent-env", "run", "hello"], env
    )
    assert hello.returncode == 0, hello.stderr
    assert "not provided by package" not in hello.stderr
    assert hello.stdout.startswith("hello  passed (hello: 1)")


@pytest.mark.parametrize(
    "form, installs",
    [
        ("pip venv", ["agentenv-framework"]),
        ("minimal kernel + core-steps", ["agentenv-kernel", "agentenv-core-steps"]),
    ],
)
def test_pip_venv_installs_run_hello(fresh, form, installs):
    uv, base, env = fresh
    venv = base / form.replace(" ", "-").replace("+", "")
    made = run([sys.executable, "-m", "venv", str(venv)], env)
    assert made.returncode == 0, made.stderr
    pip_env = {**env, "PIP_CACHE_DIR": str(base / "pipcache"), "PIP_FIND_LINKS": str(base / "dist")}
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    installed = run([*pip, *installs], pip_env)
    assert installed.returncode == 0, installed.stderr
    check = run([str(venv / "bin" / "python"), "-m", "pip", "check"], pip_env)
    assert check.returncode == 0, check.stdout
    hello = run([str(venv / "bin" / "agent-env"), "run", "hello"], env)
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.startswith("hello  passed (hello: 1)")
    # the commands of the plain install's plugins: there, or naming the package to install
    for command, dist in (
        ("init", "agentenv-scaffold"),
        ("plugin add", "agentenv-plugin-lifecycle"),
        ("runs regrade", "agentenv-grading"),
        ("tasks", "agentenv-grading"),
        ("task", "agentenv-stored-entities"),
        ("runs list", "agentenv-reporting"),
        ("runs export", "agentenv-reporting"),
        ("cache", "agentenv-caches"),
    ):
        used = run([str(venv / "bin" / "agent-env"), *command.split(), "--help"], env)
        if "agentenv-framework" in installs:
            assert used.returncode == 0, used.stderr
        else:
            assert used.returncode == 2
            assert used.stderr.endswith(
                f"Error: command {command!r} comes with {dist}, which is not installed; install "
                f"it with: pip install {dist}  (included in: pip install agentenv-framework)\n"
            )


def test_every_wheel_carries_the_licence_and_the_notice(fresh):
    _, base, _ = fresh
    wheels = sorted((base / "dist").glob("*.whl"))
    sources = [ROOT, ROOT / "kernel", ROOT / "protocol", *ROOT.glob("plugins/*/pyproject.toml")]
    assert len(wheels) == len(sources), [w.name for w in wheels]
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            for licence in ("LICENSE", "NOTICE"):
                found = [n for n in names if n.endswith(f".dist-info/licenses/{licence}")]
                assert found, f"{wheel.name} has no {licence}"
                assert archive.read(found[0]) == (ROOT / licence).read_bytes()
            metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
            assert b"License-Expression: Apache-2.0" in metadata, wheel.name


def _wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A minimal wheel of `name` `version` (no code), as a look-alike on an index would be."""
    dist = f"{name.replace('-', '_')}-{version}"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    wheel_meta = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{dist}.dist-info/METADATA", metadata)
        archive.writestr(f"{dist}.dist-info/WHEEL", wheel_meta)
        archive.writestr(f"{dist}.dist-info/RECORD", "")
    return path


def _installed(python: Path, env: dict[str, str]) -> dict[str, str]:
    """Our distributions in `python`'s environment: name -> version."""
    inspected = run([str(python), "-m", "pip", "inspect"], env)
    assert inspected.returncode == 0, inspected.stderr
    out = {}
    for item in json.loads(inspected.stdout)["installed"]:
        name = item["metadata"]["name"]
        if name.startswith("agentenv"):
            out[name] = item["metadata"]["version"]
    return out


def test_the_version_pins_keep_look_alikes_from_an_index_out(fresh):
    """A folder of higher-versioned look-alikes of our names (what the index has, or may get)
    next to our wheels: installing the meta-distribution takes every sibling from our wheels,
    and asking for an extra we did not build stops with a clear message and changes nothing."""
    uv, base, env = fresh
    impostors = base / "impostors"
    impostors.mkdir()
    for name in ("agentenv-kernel", "agentenv-framework-protocol", "agentenv-core-steps"):
        _wheel(impostors, name, "9.0.0", [])
    _wheel(impostors, "agentenv-framework", "0.9.1364", [])
    venv = base / "pinned-venv"
    assert run([sys.executable, "-m", "venv", str(venv)], env).returncode == 0
    python = venv / "bin" / "python"
    pip_env = {k: v for k, v in env.items() if k != "PIP_FIND_LINKS"}
    pip_env["PIP_CACHE_DIR"] = str(base / "pipcache")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    links = ["--find-links", str(base / "dist"), "--find-links", str(impostors)]

    installed = run([*pip, *links, "agentenv-framework==1.0.0"], pip_env)
    assert installed.returncode == 0, installed.stderr
    ours = _installed(python, pip_env)
    assert len(ours) >= 8 and set(ours.values()) == {"1.0.0"}, ours

    # the aws wheel is not in the look-alike folder: a clear refusal, nothing replaced
    (base / "dist-without-aws").mkdir()
    for wheel in (base / "dist").glob("*.whl"):
        if not wheel.name.startswith("agentenv_aws_stores"):
            shutil.copy(wheel, base / "dist-without-aws")
    links = ["--find-links", str(base / "dist-without-aws"), "--find-links", str(impostors)]
    refused = run([*pip, *links, "agentenv-framework[aws]==1.0.0"], pip_env)
    assert refused.returncode != 0
    assert "agentenv-aws-stores==1.0.0" in refused.stderr, refused.stderr
    assert _installed(python, pip_env) == ours


#: What proves each README install line worked: the command that runs hello afterwards.
README_CHECKS = {
    "uv build": None,
    "uv tool install": ["{bin}/agent-env", "run", "hello"],
    "uvx": [],  # the line runs hello itself
    "python3 -m venv": [".venv/bin/agent-env", "run", "hello"],
    "uv add": ["uv", "run", "--no-sync", "agent-env", "run", "hello"],
}


def readme_user_installs() -> list[str]:
    """The shell lines of the README's install block (the one whose doc-test comment names
    this test), comments dropped."""
    text = (ROOT / "README.md").read_text()
    found = re.search(
        r"test_the_readmes_user_installs_run_hello[^\n]*\n-->\n```bash\n(.*?)```", text, re.S
    )
    assert found, "README.md: the install block (doc-test comment naming this test) is gone"
    return [line.split("  #")[0].strip() for line in found.group(1).splitlines() if line.strip()]


def test_the_readmes_user_installs_run_hello(fresh, tmp_path):
    uv, _, env = fresh
    lines = readme_user_installs()
    forms = [next((k for k in README_CHECKS if line.startswith(k)), line) for line in lines]
    assert forms == list(README_CHECKS), forms
    wheels = tmp_path / "agentenv-wheels"
    # the README's wheel folder and nothing else: not the fixture's find-links or tool folders
    user_env = {k: v for k, v in env.items() if k not in ("UV_FIND_LINKS", "PIP_FIND_LINKS")}
    user_env.update(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    for line, form in zip(lines, forms, strict=True):
        cwd = ROOT if form == "uv build" else tmp_path / form.replace(" ", "-")
        if cwd != ROOT:
            cwd.mkdir()
        if form == "uv add":
            made = subprocess.run(
                [uv, "init", "--bare", "--name", "my-evals", "-q"],
                cwd=cwd,
                env=user_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert made.returncode == 0, made.stderr
        done = subprocess.run(
            ["bash", "-c", line.replace("~/agentenv-wheels", str(wheels))],
            cwd=cwd,
            env=user_env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
        check = README_CHECKS[form]
        if check is None:
            continue
        if check:
            argv = [uv if a == "uv" else a.format(bin=tmp_path / "bin") for a in check]
            done = subprocess.run(
                argv, cwd=cwd, env=user_env, capture_output=True, text=True, timeout=300
            )
        assert done.returncode == 0, f"{line}: {done.stderr[-2000:]}"
        assert "hello  passed (hello: 1)" in done.stdout, f"{line}: {done.stdout}"


def test_the_readmes_first_command_sets_up_a_fresh_clone(fresh, tmp_path):
    """The README's first line, in a copy of the checkout's tracked files, with the system's
    python3 (on Debian, one that refuses `pip install` outside a venv) and no uv on PATH: it
    runs hello, and the clone's .venv holds no dev or test tool."""
    _, base, env = fresh
    first = re.search(r"```bash\n(python3 [^\n]*?)\s+# set up", (ROOT / "README.md").read_text())
    assert first, "README.md: the first command is not where it was"
    clone = tmp_path / "clone"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    clean = {k: v for k, v in env.items() if not k.startswith(("UV_FIND_LINKS", "PIP_"))}
    clean.update(PATH="/usr/bin:/bin", AGENT_ENV_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        ["bash", "-c", first.group(1)],
        cwd=clone,
        env=clean,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "hello  passed (hello: 1)" in done.stdout
    installed = {
        p.name.split("-")[0].lower() for p in clone.glob(".venv/lib/*/site-packages/*.dist-info")
    }
    assert "agentenv_kernel" in installed
    assert not installed & {"pytest", "ruff", "mypy", "moto", "playwright", "hypothesis"}
