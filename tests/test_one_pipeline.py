"""One run pipeline (issue 36): nothing but `agent_env.runs.pipeline` (and the engine modules
that define them) builds engine services, trials or task instances. A front end that needs a
run builds a `RunRequest` and hands it to the pipeline, so instance creation, the run document,
lineage, the exit-code rule and resume live in one place.

Checked with `ast` over every package's source (the kernel, the protocol, every plugin and the
third-party fixture), like tests/test_public_api.py: a call `Name(...)`, `x.Name(...)` or
`Name.method(...)` of a guarded constructor outside the modules allowed to make it fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PIPELINE = {"agent_env/runs/pipeline.py", "agent_env/runs/resume.py"}
#: guarded call -> the source files (relative to their package's src) that may make it
ALLOWED: dict[str, set[str]] = {
    # an engine-services value is built by the session, for the pipeline only
    "EngineServices": {"agent_env/engine/run.py"},
    "services": PIPELINE,  # `session.services(...)`
    # task instances are built by trials, and trials by the pipeline
    "TaskInstance": {"agent_env/engine/trials.py"},
    "TaskInstance.create": {"agent_env/engine/trials.py"},
    "TaskInstance.load": {"agent_env/engine/trials.py"},
    "Trial": PIPELINE | {"agent_env/engine/trials.py"},
    "TrialRun": PIPELINE | {"agent_env/engine/trials.py"},
    "plan_run": PIPELINE,
    "resume_run": PIPELINE,
}


def _sources() -> list[tuple[Path, str]]:
    roots = [ROOT / "kernel" / "src", ROOT / "protocol" / "src"]
    roots += sorted(p for p in (ROOT / "plugins").glob("*/src") if p.is_dir())
    roots += [ROOT / "tests" / "fixtures" / "thirdparty-plugin" / "src"]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "template" not in path.relative_to(root).parts:
                found.append((path, path.relative_to(root).as_posix()))
    return found


def _called(node: ast.Call) -> list[str]:
    """The guarded names a call may be: `f`, `x.f` -> `f`, `C.m` -> `C.m` and `m`."""
    func = node.func
    if isinstance(func, ast.Name):
        return [func.id]
    if isinstance(func, ast.Attribute):
        names = [func.attr]
        if isinstance(func.value, ast.Name):
            names.append(f"{func.value.id}.{func.attr}")
        return names
    return []


def _violations(sources: list[tuple[Path, str]], root: Path = ROOT) -> list[str]:
    out = []
    for path, rel in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for name in _called(node):
                allowed = ALLOWED.get(name)
                if allowed is not None and rel not in allowed:
                    out.append(f"{path.relative_to(root)}:{node.lineno}: {name}(...)")
    return sorted(out, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_only_the_pipeline_builds_engine_services_trials_and_instances():
    found = _violations(_sources())
    assert not found, (
        "build a RunRequest and use agent_env.runs.pipeline.RunPipeline instead of:\n  "
        + "\n  ".join(found)
    )


def test_the_scan_sees_a_violation(tmp_path):
    """The scan is not vacuous: a front end that builds its own instance is reported."""
    bad = tmp_path / "src" / "front" / "end.py"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "async def go(services, task):\n"
        "    return await TaskInstance.create(services, task=task)\n"
        "def also(session):\n"
        "    return session.services()\n"
    )
    found = _violations([(bad, "front/end.py")], tmp_path)
    assert found == [
        "src/front/end.py:2: TaskInstance.create(...)",
        "src/front/end.py:4: services(...)",
    ]
