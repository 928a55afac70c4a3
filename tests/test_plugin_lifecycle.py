"""`agent-env plugin add|remove` in fresh environments of each kind that can be made here (a
virtualenv with pip, one with only `uv pip`, a `uv tool` install, a uv project, pipx when it can
be installed), with plugins
scaffolded by `agent-env plugin new` and built as wheels in the test. Nothing of ours comes from
an index (our distribution names belong to another project there): builds and installs run
offline, from uv's cache that `wheel_venv.warm_uv_cache` fills with the third-party part."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs
import pytest

from agentenv_scaffold.plugin import scaffold

sys.path.insert(0, str(Path(__file__).parent))
from wheel_venv import warm_uv_cache  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
UV = shutil.which("uv")
pytestmark = [
    pytest.mark.skipif(UV is None, reason="uv is required (scripts/test installs it)"),
    pytest.mark.network,  # installs from the package index
]


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kwargs
    )


def _ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _build(source: Path, out: Path, dist: str | None = None) -> Path:
    _ok(_run([UV, "build", "--wheel", "--offline", "--quiet", source, "-o", out]))
    name = (dist or source.name).replace("-", "_")
    return next(out.glob(f"{name}-*.whl"))


def _project(root: Path, name: str, version: str, deps: list[str], module: str) -> Path:
    (root / "src" / module).mkdir(parents=True)
    (root / "src" / module / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = {json.dumps(deps)}\n'
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["src/{module}"]\n'
    )
    return root


@attrs.frozen
class Wheels:
    dir: Path
    kernel: Path
    lifecycle: Path
    scaffold: Path
    greet: Path
    hi: Path
    oops: Path
    helper: Path
    needs: Path
    later: Path
    future_dir: Path
    future: Path

    @property
    def agent_env(self) -> tuple[Path, ...]:
        """agent-env with its plugin tools: the kernel, `plugin add|remove`, `plugin new`."""
        return (self.kernel, self.lifecycle, self.scaffold)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="session")
def wheels(tmp_path_factory) -> Wheels:
    """The wheels of the kernel and its plugin tools (agentenv-plugin-lifecycle for `plugin
    add|remove`, agentenv-scaffold) for the session, plus plugins scaffolded by `plugin new`:
    `greet` and `hi` work, `oops` raises on import, `lc-helper` registers nothing, `needs` depends on it,
    `later` declares plugin API 2, `future` needs an `agentenv-kernel` 99 (kept in a folder of
    its own). Built in parallel: this is most of the session's set-up time."""
    from concurrent.futures import ThreadPoolExecutor

    base = tmp_path_factory.mktemp("lifecycle")
    out, future_dir = base / "wheels", base / "future"
    roots = {
        n: scaffold(f"agentenv-{n}", base).root
        for n in ("greet", "hi", "oops", "needs", "later", "future")
    }
    _edit(
        roots["oops"] / "src" / "agentenv_oops" / "hooks.py",
        "registry.add(Oops)\n",
        'registry.add(Oops)\n\n\nraise RuntimeError("oops on purpose")\n',
    )
    _edit(
        roots["needs"] / "pyproject.toml",
        '"agentenv-kernel>=1.0"',
        '"agentenv-kernel>=1.0", "lc-helper"',
    )
    _edit(roots["later"] / "src" / "agentenv_later" / "hooks.py", '">=1.0,<2"', '">=2,<3"')
    _edit(roots["future"] / "pyproject.toml", '"agentenv-kernel>=1.0"', '"agentenv-kernel>=99"')
    jobs = {
        "kernel": (ROOT / "kernel", out, "agentenv-kernel"),
        "lifecycle": (ROOT / "plugins" / "plugin-lifecycle", out, "agentenv-plugin-lifecycle"),
        "scaffold": (ROOT / "plugins" / "scaffold", out, "agentenv-scaffold"),
        "helper": (_project(base / "lc-helper", "lc-helper", "1.0", [], "lc_helper"), out, None),
        "fake": (
            _project(base / "fake-kernel", "agentenv-kernel", "99.0", [], "fake_kernel"),
            future_dir,
            "agentenv-kernel",
        ),
        **{n: (root, future_dir if n == "future" else out, None) for n, root in roots.items()},
    }
    warm_uv_cache([source for source, _, _ in jobs.values()], base)
    with ThreadPoolExecutor(max_workers=4) as pool:
        built = dict(zip(jobs, pool.map(lambda job: _build(*job), jobs.values()), strict=False))
    return Wheels(
        dir=out,
        future_dir=future_dir,
        **{
            n: built[n]
            for n in (
                "kernel",
                "lifecycle",
                "scaffold",
                "greet",
                "hi",
                "oops",
                "helper",
                "needs",
                "later",
                "future",
            )
        },
    )


@attrs.frozen
class Env:
    kind: str
    agent_env: Path
    python: Path
    state_files: tuple[Path, ...]
    vars: dict[str, str]
    cwd: Path

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return _run([self.agent_env, *args], env=self.vars, cwd=self.cwd, input=stdin or "")

    def dists(self) -> list[str]:
        code = (
            "import importlib.metadata as m, json; print(json.dumps(sorted("
            "f\"{d.metadata['Name'].lower()}=={d.version}\" for d in m.distributions())))"
        )
        return json.loads(_ok(_run([self.python, "-c", code], env=self.vars)).stdout)

    def files(self) -> dict[str, bytes]:
        """Every file of the environment's site-packages and the installer's own files."""
        site = Path(
            _ok(
                _run([self.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
            ).stdout.strip()
        )
        out = {
            str(p): p.read_bytes()
            for p in site.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        out.update({str(p): p.read_bytes() for p in self.state_files})
        return out


def _vars(tmp: Path, wheels: Wheels) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_ENV_", "VIRTUAL_ENV", "UV_", "PIP_", "PYTHON"))
        or k in ("UV_CACHE_DIR", "PIP_CACHE_DIR")  # the caches `warm_uv_cache` filled
    }
    env.update(
        AGENT_ENV_HOME=str(tmp / "home"),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheels.dir),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        UV_OFFLINE="1",
        UV_FIND_LINKS=str(wheels.dir),
        UV_TOOL_DIR=str(tmp / "tools"),
        UV_TOOL_BIN_DIR=str(tmp / "bin"),
    )
    env["PATH"] = f"{Path(UV).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="session")
def pipx_bin(tmp_path_factory) -> Path | None:
    """pipx (from PATH, else installed into a session venv from uv's cache or the index)."""
    found = shutil.which("pipx")
    if found:
        return Path(found)
    venv = tmp_path_factory.mktemp("pipx") / "venv"
    if _run([UV, "venv", "--quiet", "--python", sys.executable, venv]).returncode != 0:
        return None
    for offline in (["--offline"], []):
        done = _run(
            [UV, "pip", "install", "--quiet", *offline, "--python", venv / "bin" / "python", "pipx"]
        )
        if done.returncode == 0:
            return venv / "bin" / "pipx"
    return None


def make_env(kind: str, tmp: Path, wheels: Wheels, pipx: Path | None = None) -> Env:
    """A fresh environment of `kind` with agent-env (the kernel and its plugin tools)
    installed, offline."""
    env = _vars(tmp, wheels)
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    if kind in ("pip", "uv pip"):
        venv = tmp / "venv"
        _ok(_run([UV, "venv", "--quiet", "--python", sys.executable, venv], env=env))
        extra = (
            [
                next(Path(p).glob("pip-*.whl"))
                for p in [Path(os.__file__).parent / "ensurepip" / "_bundled"]
            ]
            if kind == "pip"
            else []
        )
        _ok(
            _run(
                [
                    UV,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    venv / "bin" / "python",
                    *wheels.agent_env,
                    *extra,
                ],
                env=env,
            )
        )
        return Env(kind, venv / "bin" / "agent-env", venv / "bin" / "python", (), env, work)
    if kind == "pipx":
        if pipx is None:
            pytest.skip("pipx cannot be installed here")
        env.update(PIPX_HOME=str(tmp / "pipx"), PIPX_BIN_DIR=str(tmp / "bin"))
        env["PATH"] = f"{pipx.parent}{os.pathsep}{env['PATH']}"
        _ok(_run([pipx, "install", "--python", sys.executable, wheels.kernel], env=env))
        tools = [wheels.lifecycle, wheels.scaffold]
        _ok(_run([pipx, "inject", "agentenv-kernel", *tools], env=env))
        prefix = tmp / "pipx" / "venvs" / "agentenv-kernel"
        return Env(
            kind,
            tmp / "bin" / "agent-env",
            prefix / "bin" / "python",
            (prefix / "pipx_metadata.json",),
            env,
            work,
        )
    if kind == "uv tool":
        _ok(
            _run(
                [UV, "tool", "install", "--quiet", "--python", sys.executable, wheels.kernel]
                + [a for tool in (wheels.lifecycle, wheels.scaffold) for a in ("--with", tool)],
                env=env,
            )
        )
        prefix = tmp / "tools" / "agentenv-kernel"
        return Env(
            kind,
            tmp / "bin" / "agent-env",
            prefix / "bin" / "python",
            (prefix / "uv-receipt.toml",),
            env,
            work,
        )
    project = tmp / "lab"
    project.mkdir()
    _ok(
        _run(
            [UV, "init", "--bare", "--quiet", "--name", "lab", "--python", sys.executable],
            env=env,
            cwd=project,
        )
    )
    _ok(_run([UV, "add", "--quiet", *wheels.agent_env], env=env, cwd=project))
    return Env(
        kind,
        project / ".venv" / "bin" / "agent-env",
        project / ".venv" / "bin" / "python",
        (project / "pyproject.toml", project / "uv.lock"),
        env,
        work,
    )


KINDS = ["pip", "uv tool", "uv project", "pipx"]


@pytest.mark.parametrize("kind", KINDS)
def test_add_use_and_remove_a_scaffolded_plugin(kind, wheels, tmp_path, pipx_bin):
    env = make_env(kind, tmp_path, wheels, pipx_bin)
    before = env.dists()
    added = env.run("plugin", "add", "-y", str(wheels.greet))
    assert added.returncode == 0, added.stdout + added.stderr
    assert f"(installer: {kind})" in added.stdout
    assert "added: agentenv-greet==0.1.0" in added.stdout
    assert "ok: added plugin(s) greet; every plugin loads" in added.stdout
    plugins = {p["name"]: p for p in json.loads(env.run("plugin", "list", "--json").stdout)}
    assert plugins["greet"]["status"] == "ok"
    assert plugins["greet"]["registered"] == {"step_types": ["greet"]}
    assert plugins["greet"]["api"] == ">=1.0,<2"
    for state in env.state_files[:1]:
        assert "agentenv-greet" in state.read_text() or "agentenv_greet" in state.read_text()

    bundle = env.cwd / "bundle"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "tasks" / "t.json").write_text(
        json.dumps([{"id": "hi", "type": "greet", "name": "you"}])
    )
    ran = env.run("run", str(bundle))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "passed" in ran.stdout

    removed = env.run("plugin", "remove", "-y", "--force", "greet")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "removed: agentenv-greet==0.1.0" in removed.stdout
    assert env.dists() == before
    for state in env.state_files[:1]:
        assert "agentenv-greet" not in state.read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_a_plugin_that_fails_to_import_is_rolled_back_exactly(kind, wheels, tmp_path, pipx_bin):
    env = make_env(kind, tmp_path, wheels, pipx_bin)
    dists, files = env.dists(), env.files()
    result = env.run("plugin", "add", "-y", str(wheels.oops))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "plugin 'oops' (agentenv-oops) is failed: installed but broken" in result.stderr
    assert "oops on purpose" in result.stderr
    assert (
        "rolled back: the environment has exactly the distributions it had before" in result.stderr
    )
    assert env.dists() == dists
    after = env.files()
    assert sorted(after) == sorted(files)
    assert [p for p in files if files[p] != after[p]] == []
    assert env.run("plugin", "check").returncode == 0


@pytest.fixture
def pip_env(wheels, tmp_path) -> Env:
    return make_env("pip", tmp_path, wheels)


def test_dry_run_shows_the_plan_and_changes_nothing(pip_env, wheels):
    before = pip_env.dists()
    result = pip_env.run("plugin", "add", "--dry-run", str(wheels.greet))
    assert result.returncode == 0, result.stderr
    assert (
        f"environment: the virtualenv environment {pip_env.python.parent.parent}" in result.stdout
    )
    assert "would install agentenv-greet==0.1.0" in result.stdout
    assert f"run: {pip_env.python} -m pip install" in result.stdout
    assert "dry run: nothing changed" in result.stdout
    assert pip_env.dists() == before
    asked = pip_env.run("plugin", "add", str(wheels.greet), stdin="n\n")
    assert asked.returncode == 1 and "Proceed? [y/N]" in asked.stderr
    assert pip_env.dists() == before


def test_refusals_name_the_command_to_run_and_change_nothing(pip_env, wheels):
    before = pip_env.dists()
    own = pip_env.run("plugin", "add", "-y", "agentenv-kernel>=1")
    assert own.returncode == 1
    assert "agentenv-kernel is agent-env itself, not a plugin" in own.stderr
    itself = pip_env.run("plugin", "remove", "-y", "agentenv-plugin-lifecycle")
    assert itself.returncode == 1, itself.stdout + itself.stderr
    assert "provides `agent-env plugin add/remove` itself" in itself.stderr
    assert f"{pip_env.python} -m pip uninstall" in itself.stderr
    assert f"run: {pip_env.python} -m pip install --upgrade agentenv-kernel" in own.stderr
    wheel = pip_env.run("plugin", "add", "-y", str(wheels.helper))
    assert wheel.returncode == 1
    assert "lc-helper registers nothing under the `agent_env` entry-point group" in wheel.stderr
    assert (
        f"To install it anyway, run: {pip_env.python} -m pip install {wheels.helper}"
        in wheel.stderr
    )
    by_name = pip_env.run("plugin", "add", "-y", "lc-helper")  # found only after installing it
    assert by_name.returncode == 1, by_name.stdout
    assert "lc-helper registers nothing under the `agent_env` entry-point group" in by_name.stderr
    assert "rolled back" in by_name.stderr
    future = pip_env.run(
        "plugin", "add", "-y", "--find-links", str(wheels.future_dir), str(wheels.future)
    )
    assert future.returncode == 1, future.stdout
    assert "would replace agentenv-kernel 1.0.0 with 99.0" in future.stderr
    assert pip_env.dists() == before


def test_remove_refuses_while_the_config_or_stored_tasks_use_the_plugin(wheels, tmp_path):
    pip_env = make_env("uv pip", tmp_path, wheels)
    _ok(pip_env.run("plugin", "add", "-y", str(wheels.greet)))
    bundle = pip_env.cwd / "bundle"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "tasks" / "t.json").write_text(
        json.dumps([{"id": "hi", "type": "greet", "name": "x"}])
    )
    _ok(pip_env.run("run", str(bundle)))
    (pip_env.cwd / ".agentenv").mkdir()
    config = pip_env.cwd / ".agentenv" / "config.toml"
    config.write_text("[plugins.agentenv-greet]\nloud = true\n")
    refused = pip_env.run("plugin", "remove", "-y", "agentenv-greet")
    assert refused.returncode == 1
    assert "agentenv-greet is in use:" in refused.stderr
    assert f"{config}: [plugins.agentenv-greet] loud is a setting of this plugin" in refused.stderr
    assert "stored task " in refused.stderr and "uses step type 'greet'" in refused.stderr
    assert "agent-env plugin remove --force agentenv-greet" in refused.stderr
    assert "agentenv-greet==0.1.0" in pip_env.dists()
    config.unlink()
    forced = pip_env.run("plugin", "remove", "-y", "--force", "greet")
    assert forced.returncode == 0, forced.stderr
    assert "agentenv-greet==0.1.0" not in pip_env.dists()
    unknown = pip_env.run("plugin", "remove", "-y", "gret")
    assert (
        unknown.returncode == 1
        and "no installed plugin or distribution named 'gret'" in unknown.stderr
    )


def test_concurrent_adds_are_serialised_by_the_environment_lock(wheels, tmp_path):
    env = make_env("uv pip", tmp_path, wheels)
    lock = env.python.parent.parent / ".agentenv-plugins.lock"
    with lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("pid 4242")
        held.flush()
        blocked = env.run("plugin", "add", "-y", "--lock-timeout", "0.5", str(wheels.greet))
        fcntl.flock(held, fcntl.LOCK_UN)
    assert blocked.returncode == 1
    assert "another plugin add/remove (pid 4242) holds" in blocked.stderr
    procs = [
        subprocess.Popen(
            [str(env.agent_env), "plugin", "add", "-y", str(w)],
            env=env.vars,
            cwd=env.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in (wheels.greet, wheels.hi)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert {"agentenv-greet==0.1.0", "agentenv-hi==0.1.0"} <= set(env.dists())
    assert "(installer: uv pip)" in outs[0][0]


def test_an_externally_managed_python_is_refused_with_the_right_suggestion(wheels, tmp_path):
    system = Path("/usr/bin/python3")
    marker = (
        system.parent.parent
        / "lib"
        / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        / "EXTERNALLY-MANAGED"
    )
    if not system.exists() or not marker.exists():
        pytest.skip("no PEP 668 system Python of this version here")
    target = tmp_path / "target"
    env = _vars(tmp_path, wheels)
    _ok(
        _run(
            [
                UV,
                "pip",
                "install",
                "--quiet",
                "--python",
                system,
                "--target",
                target,
                *wheels.agent_env,
            ],
            env=env,
        )
    )
    result = _run(
        [
            system,
            "-c",
            "from agent_env.cli.main import main; main()",
            "plugin",
            "add",
            "-y",
            wheels.greet,
        ],
        env={**env, "PYTHONPATH": str(target)},
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{system} is an externally managed Python ({marker}, PEP 668)" in result.stderr
    assert "pipx install agentenv-kernel && pipx inject agentenv-kernel SPEC" in result.stderr
    assert "uv tool install agentenv-kernel --with SPEC" in result.stderr
    assert not (target / "agentenv_greet").exists()


def test_a_read_only_environment_is_refused(wheels):
    if os.geteuid() != 0 or not Path("/usr/bin/python3").exists():
        pytest.skip("needs root (to run as another user) and /usr/bin/python3")
    base = Path(tempfile.mkdtemp(prefix="agentenv-ro-"))
    try:
        base.chmod(0o755)
        env = _vars(base, wheels)
        venv = base / "venv"
        _ok(_run([UV, "venv", "--quiet", "--python", "/usr/bin/python3", venv], env=env))
        _ok(
            _run(
                [
                    UV,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    venv / "bin" / "python",
                    *wheels.agent_env,
                ],
                env=env,
            )
        )
        for path in [base, *base.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        wheel = base / wheels.greet.name
        shutil.copy(wheels.greet, wheel)
        wheel.chmod(0o644)
        result = _run(
            [venv / "bin" / "agent-env", "plugin", "add", "-y", wheel],
            cwd="/",
            env={**env, "HOME": "/tmp", "AGENT_ENV_HOME": "/tmp/agentenv-ro-home"},
            user=65534,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"the environment {venv} is read-only for this user" in result.stderr
        assert (
            "python3 -m venv .venv && .venv/bin/pip install agentenv-kernel SPEC" in result.stderr
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("kind", ["uv tool", "uv project"])
def test_a_plugin_needing_another_agent_env_changes_nothing(kind, wheels, tmp_path):
    env = make_env(kind, tmp_path, wheels)
    dists, files = env.dists(), env.files()
    result = env.run(
        "plugin", "add", "-y", "--find-links", str(wheels.future_dir), str(wheels.future)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "plugin add failed: the installer failed" in result.stderr
    assert "agentenv-kernel" in result.stderr
    assert env.dists() == dists
    assert env.files() == files


@pytest.mark.parametrize("kind", ["pip", "uv pip"])
def test_remove_takes_the_dependencies_only_it_needed(kind, wheels, tmp_path):
    env = make_env(kind, tmp_path, wheels)
    before = env.dists()
    _ok(env.run("plugin", "add", "-y", str(wheels.needs)))
    assert {"agentenv-needs==0.1.0", "lc-helper==1.0"} <= set(env.dists())
    plan = _ok(env.run("plugin", "remove", "--dry-run", "needs"))
    assert "remove (only it needed this): lc-helper" in plan.stdout
    assert "remove (only it needed this): pluggy" not in plan.stdout
    _ok(env.run("plugin", "remove", "-y", "needs"))
    assert env.dists() == before


def test_a_plugin_for_another_plugin_api_is_rolled_back(wheels, tmp_path):
    env = make_env("uv pip", tmp_path, wheels)
    before = env.dists()
    result = env.run("plugin", "add", "-y", str(wheels.later))
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "plugin 'later' (agentenv-later) is incompatible: supports plugin API >=2,<3 but this "
        "agent-env offers plugin API 1.0"
    ) in result.stderr
    assert "rolled back" in result.stderr
    assert env.dists() == before


def test_the_installed_agent_env_scaffolds_a_folder_that_plugin_add_installs(wheels, tmp_path):
    env = make_env("uv pip", tmp_path, wheels)
    new = env.run("plugin", "new", "agentenv-fresh", "--dir", str(env.cwd))
    assert new.returncode == 0, new.stdout + new.stderr
    folder = env.cwd / "agentenv-fresh"
    assert (folder / "tests" / "test_steps.py").is_file()
    added = env.run("plugin", "add", "-y", str(folder))
    assert added.returncode == 0, added.stdout + added.stderr
    assert f"add: agentenv-fresh from {folder}" in added.stdout
    assert "ok: added plugin(s) fresh; every plugin loads" in added.stdout
