"""The agent kind behind every CLI coding agent: deploy installs the CLI (cached by digest)
and creates its sandbox; each prompt writes the CLI's MCP config (the run's gateway, the
agent's role token by environment variable), runs it headless with the model endpoint and the
step's `env_vars`, and turns its session log into the trajectory.

Failures are attributed: a CLI that cannot be installed fails `deploy_agent` as `agent`; one
that exits non-zero or reports an error fails the prompt as `agent`; one that runs past the
prompt's `timeout_seconds` is killed and classed `timeout`.

In a container sandbox (`sandbox_type` docker, or `agent-env run --sandbox docker`) the CLI runs
in an image built from the host's install (`image`); the gateway and a model server on the
host's loopback are reached through relays (`agentenv_core_steps.agents.relay`).

Settings (agent folder `agent.toml` or the step's `metadata`): `version` (the npm version to
install), `base_url` (the model endpoint, else `[model] base_url` / `LITELLM_BASE_URL`),
`image` (the base image of a container sandbox, else the provider's `image`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agent_env.agents import AgentConfig, AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agentenv_cli_agents.harnesses import HARNESSES, TOKEN_ENV, Ask, Harness
from agentenv_cli_agents.names import kind_class_name

HOME = "/app/.agent-home"
LOG_TAIL = 800


async def _model_endpoint(ctx: StepContext, base_url: str | None) -> tuple[str | None, str | None]:
    """(base_url, api_key): the explicit URL, else `[model]` (refs resolved), else LITELLM_*."""
    from agentenv_protocol.agent.chat import endpoint_from_env

    config = getattr(ctx, "config", None)
    table = (
        await config.resolved_table("model", getattr(ctx.stores, "secrets", None)) if config else {}
    )
    key = table.get("api_key")
    if key and getattr(ctx, "add_secret", None) is not None:
        ctx.add_secret(str(key))
    return endpoint_from_env(base_url or table.get("base_url"), key)


@attrs.frozen(kw_only=True)
class CliAgentConfig(AgentConfig):
    """`agent.toml` of a CLI coding agent folder (the settings in the module docstring)."""

    version: str | None = None
    base_url: str | None = None
    image: str | None = None


class CliAgentKind(AgentKind):
    """Subclassed once per harness and alias (see `cli_agent_kinds`)."""

    type: ClassVar[str] = ""
    config_model = CliAgentConfig
    harness: ClassVar[Harness]
    #: `install_agent` may install it into a sandbox the task already deployed.
    installs_into_sandbox: ClassVar[bool] = True

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        from agent_env.sandbox import SandboxSpec
        from agentenv_cli_agents.install import InstallError, bundled_node, ensure_installed

        h = self.harness
        existing = spec.sandbox_name in (ctx.get("sandboxes", default={}) or {})
        if existing:
            provider = (await ctx.sandbox(str(spec.sandbox_name))).provider
        else:  # a fallback chain (`local,docker`): the CLI runs on the first
            provider = (spec.sandbox_provider or ctx.default_provider).split(",")[0]
        if existing and provider != "local":
            raise StepFailed(
                ctx.step_id,
                f"agent {spec.name!r} ({h.type}): install_agent puts a CLI agent only into a "
                f"local sandbox, and {spec.sandbox_name!r} is a {provider} sandbox; let "
                f"deploy_agent make the agent its own {provider} sandbox (sandbox_type) instead",
                failure_class="agent",
            )
        version = str(spec.settings.get("version") or h.version)
        t0 = time.perf_counter()
        try:
            exe, installed = await ensure_installed(h.package, version, h.binary)
        except InstallError as e:
            raise StepFailed(
                ctx.step_id,
                f"agent {spec.name!r} ({h.type}) could not be installed: {e}",
                failure_class="agent",
            ) from None
        ctx.log(
            f"{h.package}@{version} {'installed' if installed else 'reused from the cache'} "
            f"in {time.perf_counter() - t0:.1f}s"
        )
        install = exe.parents[2]  # <install>/node_modules/.bin/<binary>
        # the Node.js installed beside the CLI comes first on PATH (an image sets it itself)
        node_bin: str | None = str(bundled_node(install).parent)
        image, executable = None, str(exe)
        if provider != "local":
            image, executable = await self._image(ctx, spec, provider, install)
            node_bin = None
        try:
            if not existing:
                # on local, the CLI and its Node.js run from the install folder on the host:
                # an isolated sandbox sees that folder read-only
                settings = {"read_only": [str(install)]} if provider == "local" else {}
                await ctx.create_sandbox(
                    str(spec.sandbox_name),
                    SandboxSpec(image=image, env_vars=dict(spec.env_vars), settings=settings),
                    provider=provider,
                )
            elif provider == "local":  # a sandbox another step made: let it see the install
                sandbox = await ctx.sandbox(str(spec.sandbox_name))
                allow = getattr(sandbox, "add_read_only", None)
                if allow is not None:
                    allow([str(install)])
        except SandboxError as e:
            raise StepFailed(
                ctx.step_id,
                f"agent {spec.name!r}: its sandbox could not be created: {e}",
                failure_class="infrastructure",
            ) from None
        return {
            "harness": h.type,
            "package": f"{h.package}@{version}",
            "executable": executable,
            "node_bin": node_bin,
            "sandbox": spec.sandbox_name,
            "provider": provider,
            "image": image,
            "home": f"{HOME}/{spec.name}",
            "model_base_url": spec.model_base_url or spec.settings.get("base_url"),
            "installed": installed,
            "prompts": 0,
        }

    async def _image(
        self, ctx: StepContext, spec: AgentSpec, provider: str, install: Path
    ) -> tuple[str, str]:
        """(image tag, the CLI's path in it) for a container sandbox of `provider`."""
        import anyio

        from agentenv_cli_agents import image

        h = self.harness
        builder = ctx.sandbox_provider(provider)
        if not getattr(builder, "can_build_images", False):
            raise StepFailed(
                ctx.step_id,
                f"agent {spec.name!r} ({h.type}): sandbox provider {provider!r} cannot build "
                "images, and a CLI agent outside the local sandbox runs in an image with its "
                "CLI installed (use sandbox_type local or docker)",
                failure_class="infrastructure",
            )
        provider_settings = getattr(builder, "settings", None) or {}
        base = str(
            spec.settings.get("image") or provider_settings.get("image") or image.DEFAULT_BASE
        )
        t0 = time.perf_counter()
        context = await anyio.to_thread.run_sync(image.build_context, install, base, h.binary)
        try:
            info = await builder.build_image(context, f"cli-{h.type}")
        except SandboxError as e:
            raise StepFailed(
                ctx.step_id,
                f"agent {spec.name!r} ({h.type}) could not be installed into an image from "
                f"{base!r}: {e}",
                failure_class="agent",
            ) from None
        ctx.log(
            f"{h.type} image {info.tag} {'reused' if info.reused else 'built'} "
            f"in {time.perf_counter() - t0:.1f}s"
        )
        return info.tag, image.executable(h.binary)

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        from agentenv_core_steps.agents.relay import reachable_url
        from agentenv_protocol.agent.types import AgentResult, Usage

        h = self.harness
        sandbox = await ctx.sandbox(str(record["sandbox"]))
        base_url, api_key = await _model_endpoint(ctx, record.get("model_base_url"))
        provider = record.get("provider")
        if base_url:
            base_url = await reachable_url(ctx, base_url, provider)
        mcp_url = await reachable_url(ctx, request.mcp_url, provider) if request.mcp_url else None
        home = str(record["home"])
        ask = Ask(
            exe=str(record["executable"]),
            home=home,
            prompt=request.text,
            model=request.model or record.get("model"),
            system_prompt=request.system_prompt or record.get("system_prompt"),
            base_url=base_url,
            api_key=api_key,
            mcp_url=mcp_url,
        )
        call = h.invoke(ask)
        for rel, text in call.files.items():
            await sandbox.write_file(f"{home}/{rel}", text.encode(), mode=0o600)
        env = {**(record.get("env_vars") or {}), **call.env, "HOME": home}
        if record.get("node_bin"):
            env["PATH"] = os.pathsep.join([str(record["node_bin"]), os.environ.get("PATH", "")])
        if request.token:
            env[TOKEN_ENV] = request.token
        t0 = time.perf_counter()
        done = await sandbox.exec(call.argv, env=env, cwd="/app", timeout=request.timeout_seconds)
        seconds = time.perf_counter() - t0
        session = h.parse(done.stdout)
        await sandbox.write_file(f"{home}/session-{request.prompt_id}.jsonl", done.stdout.encode())
        usage = Usage(
            prompt_tokens=session.input_tokens,
            completion_tokens=session.output_tokens,
            total_tokens=session.input_tokens + session.output_tokens,
            model_calls=session.model_calls,
            tool_call_count=session.tool_calls,
        )
        trajectory = [
            {"type": "user", "content": request.text},
            *session.trajectory,
            {
                "type": "exit",
                "harness": h.type,
                "provider": provider or "local",
                "image": record.get("image"),
                "exit_code": done.exit_code,
                "timed_out": done.timed_out,
                "seconds": round(seconds, 3),
            },
        ]
        failure = None
        if done.timed_out:
            failure = ("timeout", f"{h.type} did not finish within {request.timeout_seconds:g}s")
        elif done.exit_code != 0 or session.error:
            tail = (session.error or done.stderr or done.stdout).strip()[-LOG_TAIL:]
            failure = ("agent", f"{h.type} exited with code {done.exit_code}: {tail}")
        return AgentResult(
            text=session.text, usage=usage, trajectory=tuple(trajectory), failure=failure
        )

    def record_updates(
        self, record: dict[str, Any], request: PromptRequest, result: Any
    ) -> dict[str, Any]:
        return {"prompts": int(record.get("prompts") or 0) + 1}


def cli_agent_kinds() -> list[type[CliAgentKind]]:
    """One kind per harness name and per alias, so `claude-code` and `claude` both resolve."""
    kinds: list[type[CliAgentKind]] = []
    for h in HARNESSES:
        for name in (h.type, *h.aliases):
            kinds.append(
                type(
                    kind_class_name(name),
                    (CliAgentKind,),
                    {"type": name, "harness": h, "__doc__": f"{h.package} ({name})."},
                )
            )
    return kinds


# each kind is a module attribute, so the hook registers it by import path (`kind_class_name`)
globals().update({cls.__name__: cls for cls in cli_agent_kinds()})
