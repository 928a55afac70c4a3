"""Startup benchmark: median wall time and CPU of `agent-env --version`, `--help`,
`--no-plugins --help` (the difference is what loading the entry-point plugins costs),
`run hello` and a bare `python -c pass`, over N interleaved rounds (one of each per round, so a
load spike hits them alike). A figure, not a pass/fail test.

    .venv/bin/python bench/startup.py [-n 20] [--compare [OTHER/agent-env]] [--wheels] [--floor]

CPU counts every process a command started, detached ones included: the benchmark is a child
subreaper (`bench/_proctree.py`), so whatever outlives the command (a watchdog supervisor, a
daemon) is re-parented to it, reaped and its CPU added. `own cpu` is the command alone (with
the children it waited for); `total cpu` is the whole tree; `outlived` is how many processes
per run were still running when the command exited.

`--compare` alone runs the existing product (agentenv-framework==0.9.1364 from the package
index, installed once into a scratch venv under `~/.cache/agentenv/bench/`, never into this
tree) `run hello` in the same rounds, and prints every figure and the ratios; `--compare PATH`
times another installation's `agent-env` script instead (e.g. a checkout of an earlier commit).
`--floor` also times a fresh interpreter that imports exactly the modules of other projects
(the standard library, click, attrs, pluggy, ...) that `run hello` imports, in
the order it imports them, with the collector paused as the console script pauses it: what
`run hello` would cost if agent-env's own modules and work were free. It puts the 10x target
in proportion: the headroom it leaves is what agent-env's own code, its work and the sandbox
may spend. The modules are those in `sys.modules` when `run hello` exits (also the ones
`importlib.import_module` loads, which `-X importtime` does not show). One more floor per
library in `LIBRARY_GROUPS` (attrs, click, both) leaves it out: the difference is its share,
what `run hello` would save if nothing on its path imported it, and the ratio it would then
reach is printed. What `run hello` spends in attrs besides importing it (building its attrs
classes; `library_work`) is printed too and counted with it: its share of the work goes with
it (a lower bound again: whatever would replace it costs something). anyio and cattrs were
weighed so too, and are no longer on the path.
`--wheels` also times `run hello` of this checkout installed as a user installs it
(`wheel_install`: its wheels, the plain `agentenv-framework`, in a cached scratch venv), in the
same rounds: the like-for-like comparison, since the existing product runs from its wheels too.
Byte-compiled modules are used (PYTHONDONTWRITEBYTECODE is unset; two warm-up rounds write
them); every command runs in a scratch home, state folder and working folder.

The processes each `run hello` starts are listed once at the end (under `strace -f`, when it
is installed): how many, and the programs they run.

Targets: `--version` within 150 ms of the bare interpreter with every in-tree plugin installed;
`run hello` within 150 ms wall and at least 10x less total CPU than the existing product.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from importlib.metadata import entry_points
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _proctree import TreeRun, become_subreaper, run_tree  # noqa: E402

TARGET_MS = 150.0
TARGET_RATIO = 10.0
REFERENCE = "agentenv-framework==0.9.1364"
REFERENCE_LABEL = "existing: run hello"
WHEELS_LABEL = "from wheels: run hello"
FLOOR_LABEL = "libraries alone"
WITHOUT_LABEL = "... without "
#: Top-level names of this workspace's importable packages.
OURS = ("agent_env", "agentenv_")


def reference_script() -> str:
    """The existing product's `agent-env`, installed on first use into a cached scratch venv."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = cache / "agentenv" / "bench" / REFERENCE.replace("==", "-")
    script = venv / "bin" / "agent-env"
    if script.exists():
        return str(script)
    print(f"installing {REFERENCE} into {venv} (once)", file=sys.stderr)
    shutil.rmtree(venv, ignore_errors=True)
    uv = shutil.which("uv")
    if uv:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        install = [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python")]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*install, REFERENCE], check=True)
    return str(script)


def wheel_install() -> str:
    """This checkout installed as a user installs it: every workspace package built into a
    wheel (`uv build --all-packages`), then the plain `agentenv-framework` from those wheels
    into a scratch venv under `~/.cache/agentenv/bench/` (kept per set of wheel digests). The
    existing product is timed from its wheels too; a dev checkout's editable installs add a
    `.pth` file per package to every interpreter start and a read-only bind per `src` folder
    to every sandboxed process. Returns the venv's `agent-env`."""
    import hashlib
    import tomllib

    uv = shutil.which("uv") or sys.exit("--wheels needs uv")
    root = Path(__file__).resolve().parents[1]
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    built = Path(tempfile.mkdtemp(prefix="agentenv-bench-wheels-"))
    try:
        subprocess.run(
            [uv, "build", "-q", "--all-packages", "-o", str(built)], cwd=root, check=True
        )
        wheels = sorted(built.glob("*.whl"))
        digest = hashlib.sha256(b"".join(hashlib.sha256(w.read_bytes()).digest() for w in wheels))
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        venv = cache / "agentenv" / "bench" / f"ours-{digest.hexdigest()[:16]}"
        script = venv / "bin" / "agent-env"
        if not script.exists():
            print(f"installing agentenv-framework {version} from this checkout's wheels into {venv}",
                  file=sys.stderr)  # fmt: skip
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
            subprocess.run(
                [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                 "--find-links", str(built), f"agentenv-framework=={version}"],
                check=True,
            )  # fmt: skip
        return str(script)
    finally:
        shutil.rmtree(built, ignore_errors=True)


_LINE = re.compile(r"^(\d+) +(.*)$")


def process_tree(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[int, list[str]] | None:
    """(processes `cmd` started, the programs they ran, in order) from one run under
    `strace -f` (threads are not counted); None when strace is not installed."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as trace:
        subprocess.run(
            [strace, "-f", "-qq", "-e", "trace=execve,clone,clone3,fork,vfork", "-o", trace.name]
            + cmd,
            env=env,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        lines = trace.read().splitlines()
    started, programs = 0, []
    pending: dict[str, str] = {}  # a call strace split around another process's output
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            continue
        pid, text = match.groups()
        if text.endswith("<unfinished ...>"):
            pending[pid] = text
            continue
        if text.startswith("<... "):
            text = pending.pop(pid, "") + text
        child = re.search(r"= (\d+)$", text)
        if text.startswith(("clone(", "clone3(", "fork(", "vfork(")) and child:
            started += "CLONE_THREAD" not in text
        elif text.startswith("execve(") and text.endswith("= 0"):
            programs.append(os.path.basename(text.split('"')[1]))
    return started, programs[1:]  # the first exec is the command itself


#: Libraries whose share of the floor `--floor` measures: each is left out of one more floor
#: script, and the difference is what `run hello` would save if nothing on its path imported
#: it (a lower bound: a standard module only it imports stays in).
LIBRARY_GROUPS = {
    "attrs": ("attr", "attrs"),
    "click": ("click",),
    "attrs and click": ("attr", "attrs", "click"),
}
_RECORD_MODULES = """
import sys
before = set(sys.modules)  # what a bare interpreter holds
import atexit, os, runpy
out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(script)  # as the console script runs: its caches' keys match
atexit.register(
    lambda: open(out, "w").write("\\n".join(m for m in list(sys.modules) if m not in before))
)
runpy.run_path(script, run_name="__main__")
"""


_RECORD_WORK = """
import json, os, runpy, sys, time
import attr._make, atexit
out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(script)
spent = {"attr": [0, 0.0]}
def timed(owner, name, what, counts):
    original = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            spent[what][0] += counts
            spent[what][1] += (time.thread_time() - start) * 1000
    setattr(owner, name, wrapper)
timed(attr._make._ClassBuilder, "__init__", "attr", 0)
timed(attr._make._ClassBuilder, "build_class", "attr", 1)
atexit.register(lambda: open(out, "w").write(json.dumps(spent)))
runpy.run_path(script, run_name="__main__")
"""


def library_work(cmd: list[str], env: dict[str, str], cwd: str, where: Path) -> dict[str, list]:
    """What `cmd` spends in attrs besides importing it, from runs with attrs' class builder
    timed (main-thread CPU, the median of 5 runs): {"attr": [classes built, ms]}. The classes
    are agent-env's models."""
    report = where / "work.json"
    runs = []
    for _ in range(5):
        subprocess.run(
            [sys.executable, "-c", _RECORD_WORK, str(report), *cmd], env=env, cwd=cwd,
            capture_output=True, check=True,
        )  # fmt: skip
        runs.append(json.loads(report.read_text()))
    return {
        what: [count, statistics.median(run[what][1] for run in runs)]
        for what, (count, _) in runs[0].items()
    }


def imported_modules(cmd: list[str], env: dict[str, str], cwd: str, where: Path) -> list[str]:
    """The modules of other projects `cmd` (a Python console script and its arguments)
    imports, in the order their imports began (`sys.modules` when it exits, the ones a bare
    interpreter has left out). Every import counts, also those `importlib.import_module` makes
    (a library may load one so), which `-X importtime` does not show."""
    listing = where / "modules.txt"
    for _ in range(2):  # the second run: the caches the first one wrote are read, as timed
        subprocess.run(
            [sys.executable, "-c", _RECORD_MODULES, str(listing), *cmd], env=env, cwd=cwd,
            capture_output=True, check=True,
        )  # fmt: skip
    names = listing.read_text().split()
    return [n for n in names if not n.startswith(OURS) and n not in ("__main__", "runpy")]


def floor_script(names: list[str], where: Path) -> list[str]:
    """Write a script importing `names` in order (the ones that fail, such as Windows-only
    modules, fail there too) and return the command that runs it."""
    where.write_text(
        "import gc\n"
        "gc.disable()  # as the console script pauses it\n"
        "import importlib\n"
        f"for name in {names!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        pass\n"
    )
    return [sys.executable, str(where)]


def floor_cases(
    cmd: list[str], env: dict[str, str], cwd: str, where: Path
) -> tuple[list[tuple[str, list[str]]], dict[str, float]]:
    """The floor (every module of other projects `cmd` imports) and one floor per entry of
    `LIBRARY_GROUPS` without that library; and the ms run hello spends in attrs besides
    importing it (`library_work`), by top-level module name."""
    names = imported_modules(cmd, env, cwd, where)
    print(f"{FLOOR_LABEL}: {len(names)} modules of other projects that run hello imports")
    work = library_work(cmd, env, cwd, where)
    classes, attrs_ms = work["attr"]
    print(f"besides importing them, run hello builds {classes} attrs classes in {attrs_ms:.1f} ms")
    cases = [(FLOOR_LABEL, floor_script(names, where / "floor.py"))]
    for number, (group, tops) in enumerate(LIBRARY_GROUPS.items()):
        kept = [n for n in names if n.split(".")[0] not in tops]
        cases.append((f"{WITHOUT_LABEL}{group}", floor_script(kept, where / f"floor{number}.py")))
    return cases, {library: ms for library, (_, ms) in work.items()}


def _median(runs: list[TreeRun], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("--agent-env", default=None, help="path of the agent-env script")
    parser.add_argument(
        "--compare",
        nargs="?",
        const="existing",
        default=None,
        help="time the existing product's run hello too (or, given a path, that agent-env's)",
    )
    parser.add_argument(
        "--wheels",
        action="store_true",
        help="also time run hello of this checkout installed from its wheels (wheel_install)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time importing only the modules of other projects run hello imports",
    )
    parser.add_argument(
        "--linger",
        type=float,
        default=10.0,
        help="seconds a process that outlives its command may run before it is killed",
    )
    opts = parser.parse_args()
    script = opts.agent_env or str(Path(sys.executable).with_name("agent-env"))
    if not os.path.exists(script):
        script = shutil.which("agent-env") or sys.exit("agent-env is not installed")
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("agent-env --version", [script, "--version"]),
        ("agent-env --help", [script, "--help"]),
        ("... --no-plugins --help", [script, "--no-plugins", "--help"]),
        ("agent-env run hello", [script, "run", "hello"]),
    ]
    if opts.wheels:
        cases.append((WHEELS_LABEL, [wheel_install(), "run", "hello"]))
    other_label = None
    if opts.compare == "existing":
        other_label = REFERENCE_LABEL
        cases.append((other_label, [reference_script(), "run", "hello"]))
    elif opts.compare:
        other_label = "compare: run hello"
        cases.append((other_label, [opts.compare, "run", "hello"]))
    scratch = Path(tempfile.mkdtemp(prefix="agentenv-bench-startup-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["AGENT_ENV_HOME"] = str(scratch / "home")
    env["XDG_STATE_HOME"] = str(scratch / "state")  # where the existing product keeps its stores
    env["XDG_DATA_HOME"] = str(scratch / "data")
    (scratch / "cwd").mkdir()
    plugins = sorted(
        f"{ep.name} ({ep.dist.name if ep.dist else '?'})" for ep in entry_points(group="agent_env")
    )
    load_before = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}, {opts.runs} rounds, "
        f"{len(plugins)} entry-point plugins: {', '.join(plugins) or 'none'}"
    )
    if opts.floor:
        floors, work = floor_cases([script, "run", "hello"], env, str(scratch / "cwd"), scratch)
        cases += floors
    become_subreaper()
    samples: dict[str, list[TreeRun]] = {label: [] for label, _ in cases}
    for round_ in range(opts.runs + 2):  # two warm-up rounds: page cache and .pyc files
        for label, cmd in cases:
            result = run_tree(cmd, env, linger=opts.linger, cwd=str(scratch / "cwd"))
            if result.exit_code != 0:
                sys.exit(f"{' '.join(cmd)} failed (exit {result.exit_code})")
            if round_ >= 2:
                samples[label].append(result)
    wall = {k: _median(v, "wall_ms") for k, v in samples.items()}
    own = {k: _median(v, "own_cpu_ms") for k, v in samples.items()}
    total = {k: _median(v, "tree_cpu_ms") for k, v in samples.items()}
    base = "python -c pass"
    width = max(24, *(len(label) + 1 for label, _ in cases))
    print(
        f"{'command':<{width}}{'wall ms':>9}{'x python':>9}{'own cpu':>9}{'total cpu':>10}"
        f"{'x python':>9}{'outlived':>9}{'killed':>7}"
    )
    for label, _ in cases:
        runs = samples[label]
        print(
            f"{label:<{width}}{wall[label]:>9.1f}{wall[label] / wall[base]:>9.1f}{own[label]:>9.1f}"
            f"{total[label]:>10.1f}{total[label] / total[base]:>9.1f}"
            f"{sum(r.outlived for r in runs) / len(runs):>9.1f}"
            f"{sum(r.left_running for r in runs):>7}"
        )
    load_after = os.getloadavg()
    print(
        "load average (1, 5, 15 min) before "
        + ", ".join(f"{x:.1f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.1f}" for x in load_after)
        + f" ({os.cpu_count()} CPUs)"
    )
    over = wall["agent-env --version"] - wall[base]
    scan = wall["agent-env --help"] - wall["... --no-plugins --help"]
    print(f"loading entry-point plugins for --help costs {scan:.1f} ms")
    verdict = "within" if over <= TARGET_MS else "OVER"
    print(
        f"--version costs {over:.1f} ms over a bare interpreter ({verdict} the {TARGET_MS:.0f} ms target)"
    )
    hello = "agent-env run hello"
    verdict = "within" if wall[hello] <= TARGET_MS else "OVER"
    print(
        f"run hello takes {wall[hello]:.1f} ms wall, {wall[hello] / wall[base]:.1f}x "
        f"python -c pass ({verdict} the {TARGET_MS:.0f} ms target)"
    )
    ours = [hello, WHEELS_LABEL] if opts.wheels else [hello]
    if other_label is not None:
        for mine in ours:
            ratio = total[other_label] / total[mine]
            verdict = ""
            if other_label == REFERENCE_LABEL:
                verdict = f" ({'meets' if ratio >= TARGET_RATIO else 'MISSES'} the {TARGET_RATIO:.0f}x target)"
            print(
                f"{other_label} / {'ours' if mine == hello else 'ours from wheels'}: "
                f"wall x{wall[other_label] / wall[mine]:.2f}, "
                f"own cpu x{own[other_label] / own[mine]:.2f}, total cpu x{ratio:.2f}{verdict}"
            )
    if opts.floor and other_label == REFERENCE_LABEL:
        budget = total[other_label] / TARGET_RATIO
        print(
            f"10x needs run hello at most {budget:.1f} ms of total cpu; the libraries it "
            f"imports take {total[FLOOR_LABEL]:.1f} ms alone (interpreter included), leaving "
            f"{budget - total[FLOOR_LABEL]:.1f} ms for agent-env's own modules, its work and "
            f"the sandbox, which take {total[hello] - total[FLOOR_LABEL]:.1f} ms now"
            + (
                f" ({total[WHEELS_LABEL] - total[FLOOR_LABEL]:.1f} ms from wheels)"
                if opts.wheels
                else ""
            )
        )
    if opts.floor:
        for group in LIBRARY_GROUPS:
            share = total[FLOOR_LABEL] - total[f"{WITHOUT_LABEL}{group}"]
            line = f"{group}: {share:.1f} ms of the floor"
            spent = sum(ms for library, ms in work.items() if library in LIBRARY_GROUPS[group])
            if spent:  # the work done in a library goes with it
                share += spent
                line += f", {share:.1f} ms with what run hello spends in it"
            if other_label == REFERENCE_LABEL:
                ratio = total[other_label] / (total[hello] - share)
                line += f"; with none of it on its path, run hello would reach about x{ratio:.2f}"
            print(line)
    for label, cmd in cases:
        if "run hello" not in label:
            continue
        tree = process_tree(cmd, env, str(scratch / "cwd"))
        if tree is None:
            print("strace is not installed: the processes run hello starts are not listed")
            break
        started, programs = tree
        print(f"{label} starts {started} processes: {' '.join(programs)}")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
