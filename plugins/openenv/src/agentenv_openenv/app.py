"""`build_app(bundle, ...)`: the OpenEnv server (FastAPI, from openenv's `create_app`) for a
bundle. The bundle is loaded and checked here; the stores, the materialized bundle and the
task group the episodes run in open with the app's lifespan, and close with it after every
open episode was abandoned and torn down."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from agentenv_openenv.served import Reward, Served, load

#: Sessions the server admits at once (each owns at most one live task instance).
DEFAULT_MAX_SESSIONS = 64
SHUTDOWN_TIMEOUT = 120.0
#: Seconds a reset or step waits for the task instance (its first prompt, its next turn, a
#: tool's answer) before answering with an error observation: under openenv's clients' default
#: message timeout (60 s), so the client gets a reason instead of raising.
DEFAULT_REPLY_TIMEOUT = 50.0


class Runtime:
    """What every session of one server shares: the served tasks, the engine host, the task
    group episodes run in, and the event loop (for closes from OpenEnv's worker threads)."""

    def __init__(
        self,
        served: Served,
        plugins: Any,
        reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
        pool: int = 0,
    ):
        self.served = served
        self.plugins = plugins
        self.reply_timeout = reply_timeout
        #: Warm instances kept ready per task (0: every episode deploys its own).
        self.pool = pool
        self.host: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tg: Any = None
        self.episodes: set[Any] = set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        from agent_env.openenv.host import TaskHost
        from agentenv_openenv.episode import KIND

        self.loop = asyncio.get_running_loop()
        self.host = await TaskHost.open(self.served.bundles, agent=KIND, plugins=self.plugins)
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.pool:
                    reuse = {b.name: b.reuse for b in self.served.bundles.values()}
                    await stack.enter_async_context(self.host.warm_pools(self.pool, reuse))
                async with self._episodes():
                    yield
        finally:
            await self.host.close()

    @contextlib.asynccontextmanager
    async def _episodes(self) -> AsyncIterator[None]:
        """The task group episodes run in; at its end every open episode is abandoned."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self._tg = None
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT):
                    async with anyio.create_task_group() as closing:
                        for episode in list(self.episodes):
                            closing.start_soon(episode.abandon)

    async def start(self, served_task: Any, resources: dict[Any, Any] | None = None) -> Any:
        """A new episode of `served_task`, its instance started in the server's task group
        (with `resources`, e.g. the snapshot it restores)."""
        from agentenv_openenv.episode import Episode

        if self._tg is None:
            raise RuntimeError(
                "the server is not running: serve the app with its lifespan "
                "(uvicorn, `with TestClient(app)`, or `agent-env openenv serve`)"
            )
        episode = Episode(self.host, served_task, resources)
        self.episodes.add(episode)
        self._tg.start_soon(self._run, episode)
        return episode

    async def _run(self, episode: Any) -> None:
        try:
            await episode.run()
        finally:
            self.episodes.discard(episode)

    def abandon_from_any_thread(self, episode: Any) -> None:
        """Abandon `episode`: in the background when called on the loop (shutdown waits for
        it), else on the loop, returning once it is torn down."""
        from agentenv_openenv.environment import in_loop

        loop = self.loop
        if loop is None or loop.is_closed():
            return
        if in_loop(loop):
            if self._tg is not None:
                self._tg.start_soon(episode.abandon)
            return
        future = asyncio.run_coroutine_threadsafe(episode.abandon(), loop)
        try:
            future.result(SHUTDOWN_TIMEOUT)
        except Exception as e:  # a close must not fail the session: the teardown goes on
            import logging

            logging.getLogger("agentenv_openenv").warning(
                "episode %s: abandoning it at the session's close did not finish within %gs "
                "(%s: %s); its teardown goes on in the background",
                episode.instance_id,
                SHUTDOWN_TIMEOUT,
                type(e).__name__,
                e,
            )


def build_app(
    bundle: Any,
    *,
    reward: Reward = None,
    max_concurrent_envs: int = DEFAULT_MAX_SESSIONS,
    plugins: Any = None,
    reply_timeout: float = DEFAULT_REPLY_TIMEOUT,
    samplers: Mapping[str, str] | None = None,
    pool: int = 0,
    sandbox: str | None = None,
    token: str | None = None,
) -> Any:
    """The OpenEnv app serving every task of `bundle` (a folder, an installed bundle's name, or
    a mapping of split names to those). `reward`: None for the mean of the scores that decide
    the task's outcome, a verifier id or step id for that score, or `f(scores_by_verifier_id)`.
    `reply_timeout`: seconds a reset or step waits for the task instance before it answers
    with an error observation (and abandons the episode). `samplers`: split -> sampler
    (`band:0.2-0.8`): a reset to that split without an index draws its task. `pool`: warm instances kept ready
    per task, reset between episodes instead of redeployed (0: none; docs/openenv.md).
    `sandbox`: the provider (or fallback chain `a,b`) every episode deploys on, as
    `agent-env run --sandbox` (the existing SDK's `build_app(bundle, sandbox=...)`).
    `token`: every request but `/health` must carry `Authorization: Bearer <token>`
    (`agentenv_openenv.auth`; None: no token, as before).
    `BundleError` when no task can be served; `ValueError` for a reward some task lacks."""
    if isinstance(pool, bool) or not isinstance(pool, int) or pool < 0:
        raise ValueError(f"pool= is a number of warm instances per task (0 or more), not {pool!r}")
    if not reply_timeout > 0:
        raise ValueError(f"reply_timeout= is a positive number of seconds, not {reply_timeout!r}")
    if token is not None:
        from agentenv_openenv.auth import check_token

        check_token(token)
    from agent_env.errors import PluginError
    from agent_env.openenv.host import plugin_manager
    from agentenv_openenv.episode import KIND

    plugins = plugins if plugins is not None else plugin_manager()
    if KIND not in plugins.agents.names():
        raise PluginError(
            f"the {KIND!r} agent kind is not registered: is the agentenv-openenv plugin "
            "disabled? (`agent-env plugin list`)"
        )
    served = load(bundle, plugins, reward=reward, samplers=samplers, sandbox=sandbox)
    for line in served.left_out:
        import logging

        logging.getLogger("agentenv_openenv").warning(line)
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import Observation

    from agentenv_openenv.environment import TaskEnvironment

    runtime = Runtime(served, plugins, reply_timeout, pool)
    app = create_app(
        functools.partial(TaskEnvironment, runtime),
        CallToolAction,
        CallToolObservation,
        env_name=served.env_name,
        max_concurrent_envs=max_concurrent_envs,
        reset_observation_cls=Observation,
    )
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app_: Any) -> AsyncIterator[Any]:
        async with runtime.running(), inner(app_) as state:
            yield state

    app.router.lifespan_context = lifespan
    app.state.agentenv_runtime = runtime
    if token is not None:
        from agentenv_openenv.auth import RequireToken

        app.add_middleware(RequireToken, token=token)
    return app
