"""`deploy_sandbox`: create a bare sandbox that later steps address by `sandbox_name`."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import RunOverride, Step
from agent_env.sandbox import SandboxSpec


@attrs.frozen(kw_only=True)
class DeploySandbox(Step):
    """Fields as the existing bundles use them. Limits are passed to the provider only when the
    step sets them, so a provider that cannot enforce one refuses it instead of ignoring it."""

    type: ClassVar[str] = "deploy_sandbox"
    run_overrides: ClassVar[dict[str, RunOverride]] = {"provider": RunOverride(("sandbox_type",))}

    sandbox_name: str
    sandbox_mode: Literal["vm", "container"]
    image: str | None = None
    cpu: float | None = None
    memory_mb: int | None = None
    disk_size_gb: float | None = None
    ttl_seconds: int | None = None
    exposed_ports: list[int] | None = None
    boot_mode: str | None = None
    port: int | None = None
    env_vars: dict[str, str] | None = None
    sandbox_type: str | None = None
    network_policy: dict[str, Any] | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)

    def spec(self) -> SandboxSpec:
        ports = list(self.exposed_ports or [])
        if self.port is not None and self.port not in ports:
            ports.append(self.port)
        settings: dict[str, Any] = {}
        if self.disk_size_gb is not None:
            settings["disk_size_gb"] = self.disk_size_gb
        if self.network_policy is not None:
            settings["network_policy"] = dict(self.network_policy)
        return SandboxSpec(
            image=self.image,
            env_vars=dict(self.env_vars or {}),
            cpus=self.cpu,
            memory=f"{self.memory_mb}m" if self.memory_mb is not None else None,
            ports=tuple(ports),
            labels={"sandbox_mode": self.sandbox_mode},
            settings=settings,
        )

    def check(self, bundle: Any) -> list[str]:
        if self.sandbox_mode == "container" and (self.image is None or self.port is None):
            return ["sandbox_mode 'container' needs `image` and `port`"]
        return []

    async def execute(self, ctx: StepContext) -> None:
        if ctx.get("sandboxes", self.sandbox_name) is not None:
            raise StepFailed(self.id, f"sandbox {self.sandbox_name!r} is already deployed")
        try:
            sandbox = await ctx.create_sandbox(
                self.sandbox_name, self.spec(), provider=self.sandbox_type
            )
        except SandboxError as e:
            raise StepFailed(self.id, f"cannot create sandbox {self.sandbox_name!r}: {e}") from e
        ctx.log(f"sandbox {self.sandbox_name!r}: {sandbox.provider} {sandbox.id}")
