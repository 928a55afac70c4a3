"""install_agent runs an agent folder inside a sandbox that is already up; add_skills puts
skills (inline or bundle `skills/<name>/`) into a deployed agent's sandbox as files."""

from __future__ import annotations

import pytest

from agent_env.errors import BundleError

pytestmark = pytest.mark.anyio

AGENT = """
import os
from pathlib import Path
from agentenv_protocol.agent import A2AAgent, AgentResult, serve


class Where(A2AAgent):
    name = "where"

    async def run(self, request):
        skills = sorted(p.parent.name for p in Path(".agentenv/skills").glob("*/SKILL.md"))
        return AgentResult(text=f"cwd={Path.cwd().name} marker={Path('marker.txt').exists()} "
                                f"skills={','.join(skills) or 'none'}")


serve(Where())
"""
FILES = {
    "agents/where/agent.toml": 'command = ["python", "agent.py"]\n',
    "agents/where/agent.py": AGENT,
    "agents/solver/agent.toml": 'type = "scripted"\n',
    "skills/greet/SKILL.md": "---\nname: greet\ndescription: Say hello\n---\nSay hello.\n",
    "skills/greet/examples.txt": "hello there\n",
    "artifacts/marker/marker.txt": "here\n",
}
BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
MARK = {
    "id": "mark",
    "type": "load_artifact",
    "sandbox_name": "box",
    "artifact_id": "marker",
    "destination_path": "/app",
}
INSTALL = {"id": "install", "type": "install_agent", "sandbox_name": "box", "a2a_agent_id": "where"}
SKILLS = {
    "id": "skills",
    "type": "add_skills",
    "skills": [
        {"skill_artifact_id": "greet"},
        {
            "name": "count",
            "description": "Count things",
            "body": "Count carefully.",
            "license": "MIT",
            "metadata": {"owner": "qa"},
        },
    ],
}


def ask(step_id: str) -> dict:
    return {
        "id": step_id,
        "type": "prompt_agent",
        "prompt_id": step_id,
        "prompt": "where?",
        "timeout_seconds": 30,
    }


async def test_an_installed_agent_runs_in_the_sandbox_and_sees_its_skills(runner):
    files_check = {
        "id": "files",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "files",
        "criteria": [
            {
                "type": "probe_file_contains",
                "paths": [".agentenv/skills/count/SKILL.md"],
                "expected": '(?s)^---\\nname: "count"\\ndescription: "Count things"\\n.*license: "MIT"'
                '.*"owner": "qa".*\\n---\\n\\nCount carefully\\.\\n$',
            },
            {"type": "probe_file_exists", "paths": [".agentenv/skills/greet/examples.txt"]},
        ],
    }
    steps = [BOX, MARK, INSTALL, ask("before"), SKILLS, ask("after"), files_check]
    record = await runner.run(steps, FILES)
    assert record["outcome"] == "passed (files: 1)", (record["failure"], runner.logs.lines)
    state = runner.state
    assert state["outputs"]["before"]["response"].endswith("marker=True skills=none")
    assert state["outputs"]["after"]["response"].endswith("skills=count,greet")
    agent = state["agents"]["default-agent"]
    assert agent["installed_in"] == "box" and agent["sandbox"] == "box"
    assert [s["name"] for s in agent["skills"]] == ["greet", "count"]


async def test_install_agent_refuses_what_it_cannot_install(runner):
    record = await runner.run([BOX, {**INSTALL, "a2a_agent_id": "solver"}], FILES)
    assert "failed at step 'install'" in record["outcome"], record
    assert (
        "agent 'solver' (type 'scripted') has no agent.toml `command`"
        in record["failure"]["message"]
    )

    record = await runner.run([BOX, {**INSTALL, "container_name": "app"}], FILES)
    assert "no container 'app' on sandbox 'box'" in record["failure"]["message"]
    assert "run_docker_container" in record["failure"]["message"]

    record = await runner.run([BOX, {**INSTALL, "sandbox_name": "bx"}], FILES)
    assert "failed at step 'install'" in record["outcome"]
    assert "'bx'" in record["failure"]["message"]


async def test_add_skills_to_an_in_process_agent_is_refused(runner):
    solution = {"solution": [{"response": "done"}]}
    steps = [
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "solver", "metadata": solution},
        SKILLS,
    ]
    record = await runner.run(steps, FILES)
    assert "failed at step 'skills'" in record["outcome"], record
    assert "runs in this process, not in a sandbox" in record["failure"]["message"]


def test_bad_install_and_skill_fields_are_bundle_problems(runner):
    runner.write(
        {
            **FILES,
            "tasks/t.json": [
                BOX,
                {**INSTALL, "a2a_agent_id": "wher", "a2a_port": 70000},
                {"id": "s1", "type": "add_skills", "skills": [{"name": "x"}]},
                {"id": "s2", "type": "add_skills", "skills": [{"skill_artifact_id": "gret"}]},
                {
                    "id": "s3",
                    "type": "add_skills",
                    "skills": [
                        {"name": "a b", "description": "d", "body": "b", "object_url": "s3://x"}
                    ],
                },
                {"id": "s4", "type": "add_skills", "skills": [{"nam": "x"}]},
                {"id": "s5", "type": "add_skills", "cli_artifact_ids": ["c"]},
            ],
        }
    )
    with pytest.raises(BundleError) as caught:
        runner.load()
    found = "\n".join(caught.value.problems)
    assert "step 'install': a2a_port: 70000 is not a TCP port" in found
    assert "step 'install': a2a_agent_id: no agent 'wher' in the bundle" in found
    assert "did you mean 'where'" in found
    assert "step 's1': skills[0]: description: required for an inline skill" in found
    assert "step 's2': skills[0].skill_artifact_id: no skill 'gret'" in found
    assert "did you mean 'greet'" in found
    assert "step 's3': skills[0]: set only one of body, object_url, skill_artifact_id" in found
    assert "step 's4'" in found and "did you mean 'name'" in found
    assert "step 's5': cli_artifact_ids: CLI artifacts are not supported" in found
