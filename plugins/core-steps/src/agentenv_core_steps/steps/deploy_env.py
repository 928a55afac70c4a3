"""`deploy_env`: bring an env of the bundle up in a sandbox, register it with the run's gateway
and record it under `envs.<name>` (its sandbox, URLs, tools; never a token)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import anyio
import attrs

from agent_env.context import StepContext
from agent_env.errors import PluginError, SandboxError, StepFailed
from agent_env.models import RunOverride, Step
from agent_env.sandbox import provider_chain
from agentenv_core_steps.envs import secret as env_secret
from agentenv_core_steps.envs.folder import env_name, load_env
from agentenv_core_steps.envs.mcp_server import EnvDeployError
from agentenv_core_steps.gateway import RunGateway, gateway_for


@attrs.frozen(kw_only=True)
class DeployEnv(Step):
    """Fields as the existing bundles use them; `sandbox_type` picks the provider (else the
    run's `--sandbox`, else the config default); `cpu`/`memory_mb` are enforced or refused."""

    type: ClassVar[str] = "deploy_env"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "env": ("env_id",),
        "artifact": ("artifact_id",),
    }
    run_overrides: ClassVar[dict[str, RunOverride]] = {"provider": RunOverride(("sandbox_type",))}

    env_id: str
    env_version: int | None = None
    artifact_id: str | None = None
    artifact_version: int | None = None
    ttl_seconds: int = 7200
    disk_size_gb: float = 10
    gateway_mode: str = "performance"
    cpu: float | None = None
    memory_mb: int | None = None
    sandbox_type: str | None = None
    env_state_type: str | None = None
    env_state_instance_id: str | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)
    #: An addition: true lets anything that reaches the env's port call it without the
    #: gateway (its server gets no secret); by default it answers only the run's gateway.
    allow_direct_calls: bool = False

    async def execute(self, ctx: StepContext) -> None:
        t0 = time.perf_counter()
        name = env_name(self.env_id)
        if ctx.get("envs", name) is not None:
            raise StepFailed(self.id, f"env {name!r} is already deployed in this task")
        stored = await load_env(ctx, self.env_id, self.env_version)
        try:
            env_cls = ctx.plugins.env_types.get(stored.type)
        except PluginError as e:
            raise StepFailed(self.id, f"env {name!r}: {e}") from None
        try:
            env = env_cls.from_folder(name, stored.folder, stored.config)
        except ValueError as e:
            raise StepFailed(self.id, f"env {name!r}: {e}") from None
        provider = self._provider(ctx, name, env)
        sandbox_name = f"env:{name}"
        gateway: list[RunGateway] = []
        failures: list[BaseException] = []

        async def start_gateway() -> None:
            try:
                gateway.append(await gateway_for(ctx))
            except StepFailed as e:
                failures.append(e)

        info: dict[str, Any] = {}
        secret = None if self.allow_direct_calls else _secret_for(ctx, name, env)
        extra = {"secret": secret} if secret else {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(start_gateway)
            try:
                info = await env.deploy(
                    ctx, sandbox_name=sandbox_name, provider=provider, **self._limits(), **extra
                )
            except EnvDeployError as e:
                failures.insert(0, StepFailed(self.id, str(e), failure_class=e.failure_class))
            except SandboxError as e:
                failures.insert(
                    0, StepFailed(self.id, f"env {name!r}: {e}", failure_class="infrastructure")
                )
        if failures:
            raise failures[0]
        try:
            await gateway[0].add_env(name, info["url"], secret=secret)
        except Exception as e:  # noqa: BLE001 - GatewayError, or an env that stopped answering
            raise StepFailed(
                self.id,
                f"env {name!r} came up at {info['url']} but the gateway cannot front it: {e}",
            ) from None
        card = info.get("card") or {}
        tools = sorted(t.get("name") for t in (card.get("capabilities") or {}).get("tools") or [])
        record = {
            "env": stored.entity_id,
            "version": stored.version,
            "type": stored.type,
            "provider": provider,
            "sandbox": sandbox_name,
            "url": info["url"],
            "gateway_url": gateway[0].url,
            "mcp_url": gateway[0].mcp_url,
            "card_name": card.get("name"),
            "tools": tools,
            "deployed_by": self.id,
            env_secret.RECORD_KEY: secret is not None,
        }
        if info.get("image"):
            record["image"] = info["image"]
        if "warm" in info:
            record["warm_start"] = bool(info["warm"])
        ctx.set("envs", name, value=record)
        phases = "".join(f", {k} {v:.2f}s" for k, v in (info.get("phases") or {}).items())
        ctx.log(
            f"env {name!r} up on {provider} at {info['url']} in "
            f"{time.perf_counter() - t0:.2f}s{phases}; tools: {', '.join(tools) or 'none'}"
        )

    def _provider(self, ctx: StepContext, name: str, env: Any) -> str:
        """The first provider of the step's chain (`sandbox_type`, else the run's default;
        `local` is followed by Docker on this machine) that can host `env`."""
        try:
            chain = provider_chain(
                self.sandbox_type or ctx.default_provider,
                ctx.plugins.sandbox_providers,
                local_machine=True,
            )
        except (PluginError, SandboxError) as e:
            raise StepFailed(self.id, f"env {name!r}: {e}") from None
        refused: list[str] = []
        for provider in chain:
            why = env.unavailable_on(ctx, provider)
            if why is None:
                if refused:
                    ctx.log(f"env {name!r} deploys on {provider}: " + "; ".join(refused))
                return provider
            refused.append(f"{provider} cannot host it ({why})")
        raise StepFailed(self.id, f"env {name!r}: " + "; ".join(refused))

    def _limits(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.cpu is not None:
            out["cpus"] = self.cpu
        if self.memory_mb is not None:
            out["memory"] = f"{self.memory_mb}m"
        return out


def _secret_for(ctx: StepContext, name: str, env: Any) -> str | None:
    """A new secret for env `name`, when its type can hand one to its server (its `deploy`
    names a `secret` keyword; `**limits` are sandbox limits); None otherwise (its server then
    answers direct calls, as with the opt-out)."""
    import inspect

    if "secret" not in inspect.signature(env.deploy).parameters:
        return None
    return env_secret.new(ctx, name)
