"""`verify_mcp_tool_schema`: list a deployed env's MCP tools and check each is described well
enough for an agent to use: a description, and for every parameter an explicit type (direct,
through `$ref` into `$defs`, or in an `anyOf` variant), a description, `items` for arrays,
`properties` for objects, no empty `enum` and no empty `required` list.

One result row per tool (its issues as the justification); the full report is kept under
`verifications.mcp_tool_schema`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import VerifierStep
from agentenv_core_steps.steps.reset_env import deployed_env
from agentenv_core_steps.steps.verify_env_card import TIMEOUT, row


def _resolve(param: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`param` with a `#/$defs/<name>` reference replaced by its definition (own keys win)."""
    ref = param.get("$ref")
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix):
        return param
    target = (schema.get("$defs") or {}).get(ref[len(prefix) :])
    if not isinstance(target, dict):
        return param
    return {**target, **{k: v for k, v in param.items() if k != "$ref"}}


def schema_issues(tool: str, schema: dict[str, Any]) -> list[str]:
    """What makes the input schema of `tool` hard for an agent to use; [] when nothing."""
    properties = schema.get("properties") or {}
    if not properties:
        return []
    issues = []
    if "required" in schema and not schema["required"]:
        issues.append(f"tool {tool!r} has an empty 'required' list")
    for name, raw in properties.items():
        if not isinstance(raw, dict) or not raw:
            issues.append(f"parameter {name!r} has an empty or invalid schema")
            continue
        param = _resolve(raw, schema)
        typed = "type" in param or any(
            isinstance(v, dict) and "type" in _resolve(v, schema) for v in param.get("anyOf") or []
        )
        if not typed:
            issues.append(f"parameter {name!r} has no explicit type")
        if "description" not in param:
            issues.append(f"parameter {name!r} has no description")
        if param.get("type") == "array" and "items" not in param:
            issues.append(f"parameter {name!r} is an array without 'items'")
        if param.get("type") == "object" and "properties" not in param:
            issues.append(f"parameter {name!r} is an object without 'properties'")
        if "enum" in param and not param["enum"]:
            issues.append(f"parameter {name!r} has an empty enum")
    return issues


@attrs.frozen(kw_only=True)
class VerifyMcpToolSchema(VerifierStep):
    type: ClassVar[str] = "verify_mcp_tool_schema"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str

    async def execute(self, ctx: StepContext) -> None:
        from agentenv_core_steps.envs import secret as env_secret
        from agentenv_protocol.client import EnvClient
        from agentenv_protocol.errors import ProtocolError

        name, record = deployed_env(ctx, self.env_id)
        try:
            async with EnvClient(
                record["url"], timeout=TIMEOUT, headers=env_secret.headers(ctx, name)
            ) as client:
                tools = await client.list_tools()
        except ProtocolError as e:
            raise StepFailed(
                self.id, f"env {name!r}: tools/list failed: {e}", failure_class="env"
            ) from None
        rows, report = [], {}
        missing_description = []
        for tool in tools:
            issues = schema_issues(tool.name, tool.inputSchema or {})
            if not (tool.description or "").strip():
                missing_description.append(tool.name)
                issues.insert(0, f"tool {tool.name!r} has no description")
            if issues:
                report[tool.name] = issues
            rows.append(row(tool.name, not issues, "; ".join(issues) or "well described"))
        if not rows:
            rows.append(row("tools", True, "the env serves no tools"))
        ctx.set(
            "verifications",
            "mcp_tool_schema",
            value={
                "passed": not report,
                "total_tools": len(tools),
                "tools_missing_description": missing_description,
                "parameter_issues": report,
            },
        )
        summary = (
            f"{len(report)} of {len(tools)} tools with schema issues"
            if report
            else f"{len(tools)} tools well described"
        )
        self.record(ctx, rows, f"env {name!r}: {summary}")
