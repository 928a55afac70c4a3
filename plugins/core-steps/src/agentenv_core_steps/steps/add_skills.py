"""`add_skills`: give a deployed agent skills, as files in its sandbox.

Each skill becomes `<workdir>/.agentenv/skills/<name>/SKILL.md` (plus the folder's other
files) in the agent's sandbox: a bundle skill (`skill_artifact_id`, a `skills/<name>/`
folder) is copied as is; an inline skill (`name`, `description`, `body`, ...) is rendered
with the Agent Skills front matter. The paths are kept under `agents.<agent_name>.skills`.
An agent that runs in this process (tool-loop, scripted) has no sandbox and is refused.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import Step
from agentenv_core_steps.targets import DEFAULT_AGENT

SKILLS_DIR = ".agentenv/skills"
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@attrs.frozen(kw_only=True)
class Skill:
    """One skill, as the existing bundles write it: inline, or a bundle skill by id."""

    name: str | None = None
    description: str | None = None
    body: str | None = None
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] | None = None
    allowed_tools: str | None = None
    skill_artifact_id: str | None = None
    skill_artifact_version: int | None = None
    object_url: str | None = None

    def problems(self) -> list[str]:
        sources = [f for f in ("body", "object_url", "skill_artifact_id") if getattr(self, f)]
        if len(sources) > 1:
            return [
                f"set only one of body, object_url, skill_artifact_id (got {', '.join(sources)})"
            ]
        if self.object_url:
            return [
                "object_url: skills from object-store URLs are not supported; put the "
                "skill in the bundle's skills/<name>/ and name it by skill_artifact_id"
            ]
        if self.skill_artifact_id:
            extra = [
                f
                for f in ("body", "license", "compatibility", "metadata", "allowed_tools")
                if getattr(self, f)
            ]
            return (
                [f"{', '.join(extra)}: a skill_artifact_id skill has its own SKILL.md"]
                if extra
                else []
            )
        problems = [
            f"{f}: required for an inline skill"
            for f in ("name", "description")
            if not getattr(self, f)
        ]
        if self.name and not SAFE_NAME.match(self.name):
            problems.append(f"name: {self.name!r} must be letters, digits, '.', '_' or '-'")
        return problems

    def skill_md(self) -> str:
        front = {"name": self.name, "description": self.description}
        for key, value in (
            ("license", self.license),
            ("compatibility", self.compatibility),
            ("allowed-tools", self.allowed_tools),
        ):
            if value:
                front[key] = value
        lines = [f"{k}: {json.dumps(v)}" for k, v in front.items()]
        if self.metadata:
            lines.append("metadata:")
            lines += [
                f"  {json.dumps(str(k))}: {json.dumps(str(v))}" for k, v in self.metadata.items()
            ]
        return "---\n" + "\n".join(lines) + "\n---\n\n" + (self.body or "").rstrip() + "\n"


@attrs.frozen(kw_only=True)
class AddSkills(Step):
    """Fields as the existing bundles use them."""

    type: ClassVar[str] = "add_skills"

    skills: list[Skill] = attrs.field(factory=list)
    cli_artifact_ids: list[str] = attrs.field(factory=list)
    file_artifact_universe_ids: list[str] = attrs.field(factory=list)
    agent_name: str = DEFAULT_AGENT

    def check(self, bundle: Any) -> list[str]:
        problems = [f"skills[{i}]: {p}" for i, s in enumerate(self.skills) for p in s.problems()]
        if self.cli_artifact_ids:
            problems.append(
                "cli_artifact_ids: CLI artifacts are not supported; ship the CLI's "
                "skill as a skills/<name>/ folder"
            )
        if self.file_artifact_universe_ids:
            problems.append(
                "file_artifact_universe_ids: not supported; load the files with "
                "load_artifact and describe them in an inline skill"
            )
        skills = getattr(bundle, "skills", None)
        if skills is not None:
            from agent_env.suggest import did_you_mean

            for i, skill in enumerate(self.skills):
                ref = skill.skill_artifact_id
                name = ref.rstrip("/").rsplit("/", 1)[-1] if ref else None
                if ref and name and not ref.startswith("@") and name not in skills:
                    problems.append(
                        f"skills[{i}].skill_artifact_id: no skill {name!r} in the "
                        f"bundle's skills/{did_you_mean(name, skills)}"
                    )
        if not self.skills and not problems:
            problems.append("skills: name at least one skill")
        return problems

    async def execute(self, ctx: StepContext) -> None:
        problems = self.check(None)
        if problems:
            raise StepFailed(self.id, "; ".join(problems))
        agent = ctx.get("agents", self.agent_name)
        if not isinstance(agent, dict):
            agents = sorted(ctx.get("agents", default={}) or {})
            raise StepFailed(
                self.id,
                f"agent {self.agent_name!r} is not deployed in this task; "
                f"deployed: {', '.join(agents) or 'none'}",
            )
        if not agent.get("sandbox"):
            raise StepFailed(
                self.id,
                f"agent {self.agent_name!r} ({agent.get('type')}) runs in "
                "this process, not in a sandbox, so it has nowhere to "
                "keep skill files",
            )
        sandbox = await ctx.sandbox(agent["sandbox"])
        root = f"{sandbox.workdir.rstrip('/')}/{SKILLS_DIR}"
        added = list(agent.get("skills") or [])
        try:
            with tempfile.TemporaryDirectory(prefix="agentenv-skills-") as tmp:
                for index, skill in enumerate(self.skills):
                    name, folder = await self._folder(ctx, skill, Path(tmp) / str(index))
                    path = f"{root}/{name}"
                    await sandbox.copy_in(folder, path)
                    added.append({"name": name, "path": f"{path}/SKILL.md"})
        except SandboxError as e:
            raise StepFailed(
                self.id, f"copying skills into {agent['sandbox']!r} failed: {e}"
            ) from None
        ctx.set("agents", self.agent_name, "skills", value=added)
        ctx.log(
            f"agent {self.agent_name!r}: skills {', '.join(s['name'] for s in added)} in {root}"
        )

    async def _folder(self, ctx: StepContext, skill: Skill, scratch: Path) -> tuple[str, Path]:
        """(name, host folder holding SKILL.md) of one skill."""
        if skill.skill_artifact_id:
            from agentenv_core_steps.envs.folder import _fetch_files

            ref = skill.skill_artifact_id
            entity_id = ref if ref.startswith("@") else f"{ctx.task_id.rsplit('/', 1)[0]}/{ref}"
            entity = await ctx.stores.entities.get("skill", entity_id, skill.skill_artifact_version)
            if entity is None:
                raise StepFailed(self.id, f"no skill {ref!r} in the stores (bundle skills/)")
            folder = await _fetch_files(ctx, entity.files or {}, entity.digest.split(":", 1)[-1])
            return str(entity.content.get("name") or ref.rsplit("/", 1)[-1]), folder
        scratch.mkdir(parents=True)
        (scratch / "SKILL.md").write_text(skill.skill_md())
        return str(skill.name), scratch
