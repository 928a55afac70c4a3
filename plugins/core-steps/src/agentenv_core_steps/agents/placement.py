"""Where an agent with a Dockerfile runs. `sandbox_type: "local"` means "on this machine", as for
envs (`deploy_env`): host processes cannot build the agent's image, so `local` is followed by
the registered providers that build images on this machine (Docker); a chain `a,b` is tried in
order. When none can, the error names the agent's folder and what to change.
"""

from __future__ import annotations

from agent_env.agents import AgentSpec
from agent_env.context import StepContext
from agent_env.errors import PluginError, SandboxError, StepFailed
from agent_env.sandbox import provider_chain


def agent_label(spec: AgentSpec) -> str:
    """`'pi'`, or `'pi' (deployed as 'default-agent')` when the step's agent name differs
    from the agent folder it deploys."""
    folder = spec.folder_id.rstrip("/").rsplit("/", 1)[-1] if spec.folder_id else spec.name
    if folder == spec.name:
        return repr(folder)
    return f"{folder!r} (deployed as {spec.name!r})"


def image_provider(ctx: StepContext, spec: AgentSpec) -> str:
    """The provider that builds and runs the image of `spec`'s Dockerfile: Docker when the step
    names none, else the first of its chain (`local` followed by Docker) that builds images."""
    if not spec.sandbox_provider:
        return "docker"
    providers = ctx.plugins.sandbox_providers
    try:
        chain = provider_chain(spec.sandbox_provider, providers, local_machine=True)
    except (PluginError, SandboxError) as e:
        raise StepFailed(ctx.step_id, f"agent {agent_label(spec)}: {e}") from None
    passed: list[str] = []
    for name in chain:
        if providers.attribute(name, "can_build_images", False):
            if passed:
                ctx.log(
                    f"agent {agent_label(spec)} deploys on {name}: "
                    + "; ".join(f"{p} cannot build its Dockerfile" for p in passed)
                )
            return name
        passed.append(name)
    builders = [n for n in providers.names() if providers.attribute(n, "can_build_images", False)]
    fix = (
        f"name one that can (sandbox_type or --sandbox: {', '.join(builders)})"
        if builders
        else "install one that can (docker: pip install agentenv-docker-sandbox)"
    )
    raise StepFailed(
        ctx.step_id,
        f"agent {agent_label(spec)} has a Dockerfile, and sandbox_type "
        f"{spec.sandbox_provider!r} builds no images (" + ", ".join(passed) + " cannot): " + fix,
        failure_class="infrastructure",
    )
