"""`a2a_agent`: any agent that serves A2A with the AgentEnv extensions. Where it runs comes from
its bundle folder: `agent.toml` `url` (already running), a `Dockerfile` (built, content-addressed,
and run in a sandbox of the docker provider), or only `agent.toml` `command` (a process in a
sandbox of the step's provider). Without a folder it is the built-in tool-loop agent served
over A2A as a process (`python -m agentenv_protocol.agent.tool_loop_agent`).

Deploying hands the agent its config (agent-config), the run gateway's MCP endpoint with its
role-bound token (mcp-config), and `env_vars` plus the model endpoint as environment variables.
A container reaches the gateway and a model server on the host's loopback through relays
(`relay.reachable_url`, shared with the CLI agents).
"""

from __future__ import annotations

import sys
import uuid
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.agents import AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.sandbox import SandboxSpec
from agentenv_core_steps.agents.placement import agent_label, image_provider
from agentenv_core_steps.agents.relay import reachable_url
from agentenv_core_steps.agents.tool_loop import ToolLoopConfig, model_endpoint

AGENT_PORT = 8000
DEFAULT_COMMAND = ["python", "-m", "agentenv_protocol.agent.tool_loop_agent"]


def _given(**values: Any) -> dict[str, Any]:
    """The settings that have a value (None, "" and 0 are left out)."""
    return {k: v for k, v in values.items() if v}


def _sandbox_name(spec: AgentSpec) -> str:
    """The agent's sandbox: the one the step names, else `deploy_agent`'s default."""
    return spec.sandbox_name or f"agent:{spec.name}"


async def _wait_ready(agent: Any, process: Any, timeout: float, every: int) -> None:
    """Poll the agent's card until it answers; stop early when its `Process` exits (asked
    every `every` polls)."""
    from agentenv_core_steps.envs.mcp_server import exit_code
    from agentenv_protocol.agent.client import A2AError

    deadline = anyio.current_time() + timeout
    polls = 0
    while True:
        try:
            await agent.card()
            return
        except A2AError as e:
            last = e
        polls += 1
        code = await exit_code(process, polls, every)
        if code is not None:
            raise A2AError(
                f"agent at {agent.base_url} exited with code {code} before serving its card"
            )
        if anyio.current_time() > deadline:
            raise A2AError(f"agent at {agent.base_url} did not come up within {timeout:g}s: {last}")
        await anyio.sleep(0.02)


@attrs.frozen(kw_only=True)
class A2AConfig(ToolLoopConfig):
    """`agent.toml` of an `a2a_agent` folder: where the agent runs, and the tool-loop settings
    it is configured with."""

    url: str | None = None
    command: str | list[str] | None = None
    timeout_seconds: float | None = None
    startup_timeout_seconds: float | None = None


class A2AAgentKind(AgentKind):
    type: ClassVar[str] = "a2a_agent"
    default_for: ClassVar[str | None] = "agent"
    config_model = A2AConfig

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        from agentenv_protocol.agent.client import A2AClient, A2AError

        settings = spec.settings
        record: dict[str, Any] = {"context_id": uuid.uuid4().hex}
        if spec.folder is None and not settings.get("url") and not settings.get("command"):
            record["ours"] = True  # our own tool-loop agent: its failure classes are ours
        process = None
        provider = spec.sandbox_provider
        if settings.get("url"):
            url = str(settings["url"]).rstrip("/")
        else:
            process, url, provider = await self._start(ctx, spec)
            record["sandbox"] = _sandbox_name(spec)
            record["provider"] = provider
        record["url"] = url
        startup = float(settings.get("startup_timeout_seconds") or 60)
        try:
            async with A2AClient(url) as agent:
                # a host process's exit is a cheap poll; a container's costs a daemon call
                await _wait_ready(agent, process, startup, 1 if provider in (None, "local") else 25)
                config = _given(model=spec.model, system_prompt=spec.system_prompt, role=spec.role)
                base_url = spec.model_base_url or settings.get("base_url")
                if base_url:
                    config["model_base_url"] = await reachable_url(ctx, base_url, provider)
                for key in ("max_turns", "timeout_seconds", "tool_timeout_seconds"):
                    if settings.get(key) is not None:
                        config[key] = settings[key]
                if config:
                    await agent.configure(**config)
                if spec.mcp_url:
                    headers = {"authorization": f"Bearer {spec.token}"} if spec.token else None
                    mcp_url = await reachable_url(ctx, spec.mcp_url, provider)
                    await agent.add_mcp_server(mcp_url, name="gateway", headers=headers)
                    record["mcp_url"] = mcp_url
                    record["gateway_mcp_url"] = spec.mcp_url
        except A2AError as e:
            logs = ""
            if process is not None:
                from agentenv_core_steps.envs.mcp_server import process_tail

                try:
                    logs = (await process_tail(process)).strip()
                except Exception:  # logs are a courtesy
                    logs = ""
            raise StepFailed(
                ctx.step_id,
                f"agent {spec.name!r} is unreachable or refused its setup: {e}"
                + (f"\n--- agent output ---\n{logs}" if logs else ""),
                failure_class="agent",
            ) from None
        return record

    async def _start(self, ctx: StepContext, spec: AgentSpec) -> tuple[Any, str, str | None]:
        settings = spec.settings
        folder = spec.folder
        sandbox_name = _sandbox_name(spec)
        dockerfile = folder is not None and (folder / "Dockerfile").is_file()
        existing = bool(spec.sandbox_name) and spec.sandbox_name in (
            ctx.get("sandboxes", default={}) or {}
        )
        if existing:
            provider = (await ctx.sandbox(str(spec.sandbox_name))).provider
        else:
            provider = image_provider(ctx, spec) if dockerfile else spec.sandbox_provider or "local"
        command = settings.get("command") or DEFAULT_COMMAND
        if isinstance(command, str):
            command = ["sh", "-c", command]
        base_url, api_key = await model_endpoint(
            ctx, spec.model_base_url or settings.get("base_url")
        )
        env = dict(spec.env_vars)
        if base_url:
            env.setdefault("LITELLM_BASE_URL", await reachable_url(ctx, base_url, provider))
        if api_key:
            env.setdefault("LITELLM_API_KEY", api_key)
        if provider in (None, "local") and command[:1] == ["python"]:
            command = [sys.executable, *command[1:]]
        try:
            own_cmd = dockerfile and not settings.get("command") and not existing
            image: str | None = None
            if existing:
                sandbox = await ctx.sandbox(sandbox_name)
            elif own_cmd:  # the image's CMD is the agent: run it as the container's process
                image = await self._image(ctx, spec, provider)
                env["PORT"] = str(AGENT_PORT)
                sandbox = await ctx.create_sandbox(
                    sandbox_name,
                    SandboxSpec(
                        image=image,
                        env_vars=env,
                        ports=(AGENT_PORT,),
                        settings={"command": "image"},
                    ),
                    provider=provider,
                )
            else:
                image = await self._image(ctx, spec, provider) if dockerfile else None
                sandbox = await ctx.create_sandbox(
                    sandbox_name,
                    SandboxSpec(image=image, env_vars=env, ports=(AGENT_PORT,)),
                    provider=provider,
                )
            if own_cmd:
                url = sandbox.url(AGENT_PORT)
                process = await sandbox.main_process()
            else:
                # `install_agent` runs an agent in a sandbox it did not create, at its `port`
                # and in its `workdir` (settings), with the folder copied in
                port = int(settings.get("port") or AGENT_PORT) if existing else AGENT_PORT
                workdir = str(settings.get("workdir") or sandbox.workdir)
                if folder is not None and (existing or not dockerfile):
                    await sandbox.copy_in(folder, workdir)
                process = await sandbox.start_process(command, env=env, cwd=workdir, port=port)
                url = process.url
        except SandboxError as e:
            raise StepFailed(
                ctx.step_id,
                f"agent {agent_label(spec)} could not be started: {e}",
                failure_class="infrastructure",
            ) from None
        provider = getattr(sandbox, "provider", provider)
        return process, url.rstrip("/"), provider

    async def _rehand_gateway(
        self, ctx: StepContext, agent: Any, record: dict[str, Any], request: PromptRequest
    ) -> None:
        """Give the agent the run's current gateway: it was restarted (a resumed run), or the
        envs were deployed after the agent."""
        if not request.mcp_url:
            return
        try:
            await agent.remove_mcp_server("gateway")
        except Exception:  # already gone
            pass
        mcp_url = await reachable_url(ctx, request.mcp_url, record.get("provider"))
        headers = {"authorization": f"Bearer {request.token}"} if request.token else None
        await agent.add_mcp_server(mcp_url, name="gateway", headers=headers)
        ctx.set("agents", request.agent_name, "gateway_mcp_url", value=request.mcp_url)
        ctx.set("agents", request.agent_name, "mcp_url", value=mcp_url)

    async def _image(self, ctx: StepContext, spec: AgentSpec, provider: str) -> str:
        builder = ctx.sandbox_provider(provider)
        if not getattr(builder, "can_build_images", False):
            raise StepFailed(
                ctx.step_id,
                f"agent {agent_label(spec)} has a Dockerfile: building it needs a sandbox "
                f"provider that builds images, not {provider!r}",
                failure_class="infrastructure",
            )
        from agent_env.paths import cache_dir
        from agentenv_core_steps.agents.images import build_context

        assert spec.folder is not None  # only an agent folder with a Dockerfile is built
        context = await anyio.to_thread.run_sync(build_context, spec.folder, cache_dir())
        return (await builder.build_image(context, f"agent-{spec.name}")).tag

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_protocol.agent.client import A2AClient, A2AError, task_data, task_text
        from agentenv_protocol.agent.types import AgentResult, Usage

        url = record["url"]
        try:
            async with A2AClient(url, timeout=30) as agent:
                changes = _given(
                    model=request.model,
                    system_prompt=request.system_prompt,
                    max_turns=request.max_turns,
                    timeout_seconds=request.timeout_seconds,
                )
                if changes:
                    await agent.configure(**changes)
                if request.mcp_url and record.get("gateway_mcp_url") != request.mcp_url:
                    await self._rehand_gateway(ctx, agent, record, request)
                with anyio.fail_after(request.timeout_seconds + 15):
                    task = await agent.send(
                        request.text,
                        context_id=record.get("context_id"),
                        timeout=request.timeout_seconds + 10,
                    )
                try:
                    trajectory = await agent.trajectory(task["id"])
                except A2AError:
                    trajectory = []
        except TimeoutError:
            return AgentResult(
                text="",
                failure=(
                    "agent",
                    f"agent at {url} did not answer within {request.timeout_seconds:g}s",
                ),
            )
        except A2AError as e:
            return AgentResult(text="", failure=("agent", str(e)))
        usage = task_data(task, "usage") or sdk_usage(task)
        failure = task_data(task, "failure") or sdk_failure(task)
        state = task["status"].get("state")
        result_failure = None
        if failure:
            result_failure = reported_failure(failure, ours=bool(record.get("ours")))
        elif state not in ("completed", None):
            result_failure = ("agent", f"the agent's task ended {state!r}")
        fields = {f.name for f in Usage.__attrs_attrs__}
        known = {k: v for k, v in usage.items() if k in fields and isinstance(v, int)}
        return AgentResult(
            text=task_text(task),
            usage=Usage(**known),
            trajectory=tuple(trajectory),
            failure=result_failure,
        )


def sdk_usage(task: dict[str, Any]) -> dict[str, int]:
    """The usage an `agentenv_protocol.a2a_agent` agent reports in its final message's
    metadata (`tool_call_count`, `input_tokens`, `output_tokens`), in our record's names."""
    message = (task.get("status") or {}).get("message") or {}
    usage = (message.get("metadata") or {}).get("usage")
    if not isinstance(usage, dict):
        return {}
    counts = {
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
        "tool_call_count": usage.get("tool_call_count"),
    }
    out = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
    if "prompt_tokens" in out or "completion_tokens" in out:
        out["total_tokens"] = out.get("prompt_tokens", 0) + out.get("completion_tokens", 0)
    return out


#: An SDK agent's `TaskError.error_type` -> the failure class it claims
SDK_ERROR_CLASSES = {"agent_error": "agent", "infra_error": "infrastructure"}


def sdk_failure(task: dict[str, Any]) -> dict[str, str] | None:
    """The failure an `agentenv_protocol.a2a_agent` agent reports: a data part with
    `error_code` and `error_message` (and `error_type`), as {"class", "message"}."""
    from agentenv_protocol.agent.client import task_data

    code = task_data(task, "error_code")
    if code is None:
        return None
    message = task_data(task, "error_message")
    claimed = SDK_ERROR_CLASSES.get(str(task_data(task, "error_type")), "agent")
    return {"class": claimed, "message": f"{code}: {message}" if message else str(code)}


#: Classes an agent may give its own failure: the others would take the trial out of the
#: agent's statistics (or blame the env) on the agent's word alone.
SELF_REPORTED = ("agent", "timeout")


def reported_failure(failure: dict[str, Any], *, ours: bool) -> tuple[str, str]:
    """(class, message) of the failure an A2A agent reported. Only our own agent is believed
    about an `env` or `infrastructure` cause; any other agent's failure is the agent's (the
    gateway's call log, which the agent cannot write, still blames an env that failed it:
    `prompt_agent.blame`)."""
    cls, message = str(failure.get("class") or "agent"), str(failure.get("message"))
    if ours or cls in SELF_REPORTED:
        return cls, message
    return (
        "agent",
        f"{message} (the agent reported class {cls!r}; an agent's own report is not trusted to blame anyone else)",
    )
