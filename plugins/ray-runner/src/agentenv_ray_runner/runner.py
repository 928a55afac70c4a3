"""`RayRunner`: the trials of a run as calls on a pool of Ray actors, each actor a worker
process holding one `agent_env.runners.TrialWorker` (its own session and stores
connection, the bundle loaded once) that runs several trials at a time on its event loop.

The trial contract is the local runner's: each trial's records land in the run's stores, the
controller counts the final record each call returns, Ctrl-C cancels the remote trials (each
tears its sandboxes down and writes its `cancelled` record before the run's summary), and a
worker that dies mid-trial costs an attempt, not the trial: its attempt is marked failed for an
infrastructure reason and the trial runs again on a restarted actor.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
from collections.abc import Sequence
from typing import Any, ClassVar

import anyio

from agent_env import runners as remote
from agent_env.errors import AgentEnvError
from agent_env.runners import LocalRunner

log = logging.getLogger(__name__)

#: Document and object store types whose data lives on the controller's machine only.
LOCAL_STORES = {"sqlite", "filesystem"}
#: How long a cancelled run waits for its remote trials to tear down.
CANCEL_GRACE_SECONDS = 120.0
#: Worker deaths one trial may cost before it is given up (failed as infrastructure).
WORKER_LOSS_RETRIES = 3


class RayRunner:
    """Runs trials on a Ray cluster (`[run] runner = "ray"` or `agent-env run --runner ray`).

    Settings (`[run.ray]`, or `--address`): `address` (a running cluster, e.g. `host:6379` or
    `ray://host:10001`; unset starts a local one for the run), `actors` (worker processes;
    default one per CPU of the cluster, at most `concurrency`), `num_cpus` (CPUs each actor
    reserves, default 1), `namespace`.
    """

    type: ClassVar[str] = "ray"

    def __init__(
        self,
        concurrency: int = 8,
        address: str | None = None,
        actors: int | None = None,
        num_cpus: float | None = None,
        namespace: str | None = None,
        **_settings: Any,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.concurrency = concurrency
        self.address = address or None
        self.actors = actors
        self.num_cpus = 1.0 if num_cpus is None else float(num_cpus)
        self.namespace = namespace

    async def run(self, instances: Sequence[Any]) -> list[dict[str, Any]]:
        remote_trials = [i for i in instances if hasattr(i, "run_remote")]
        if len(remote_trials) != len(instances) or not remote_trials:
            # resuming single task instances (`--resume ti-...`): nothing to fan out
            return await LocalRunner(self.concurrency).run(instances)
        # Ray's driver prints the cluster's error messages (a worker died...) on stdout from a
        # thread of its own: stdout is for the run's summary (`--json`), so they go to stderr
        # until the driver is shut down.
        with contextlib.redirect_stdout(sys.stderr):
            ray = await anyio.to_thread.run_sync(_connect, self.address, self.namespace)
            try:
                await self._run_on(ray, remote_trials)
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(ray.shutdown)
        return [t.record for t in instances]

    async def _run_on(self, ray: Any, trials: Sequence[Any]) -> None:
        trial_run = trials[0].owner
        nodes = await anyio.to_thread.run_sync(_alive_nodes, ray)
        _check_stores(trial_run.services.config, nodes, self.address)
        context = await remote.context_for(trial_run, publish=nodes > 1)
        pool = await anyio.to_thread.run_sync(self._start_pool, ray, context)
        try:
            await self._dispatch(ray, pool, trials)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_stop_pool, ray, pool)
                # what a worker that died left on this machine (its leases' owner is gone)
                await trial_run.services.sandboxes.reap_orphans()

    def _start_pool(self, ray: Any, context: remote.RunContext) -> list[Any]:
        from agentenv_ray_runner.worker import TrialActor

        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = self.actors or max(1, min(self.concurrency, int(cpus // self.num_cpus) or 1))
        size = min(size, self.concurrency)
        per_actor = max(1, math.ceil(self.concurrency / size))
        actor_cls = ray.remote(TrialActor).options(
            num_cpus=self.num_cpus,
            max_concurrency=per_actor + 1,  # one more for `cancel_all`
            max_restarts=-1,
            max_task_retries=0,
        )
        pool = [actor_cls.remote(context.to_dict()) for _ in range(size)]
        # one round trip each: the actors are up (and their imports done) before trials go
        ray.get([actor.ready.remote() for actor in pool])
        return pool

    async def _dispatch(self, ray: Any, pool: list[Any], trials: Sequence[Any]) -> None:
        todo = iter(trials)
        per_actor = max(1, math.ceil(self.concurrency / len(pool)))
        loss_errors = _loss_errors()

        async def worker(actor: Any) -> None:
            for trial in todo:
                documents = trial.owner.services.stores.documents

                async def call(ticket: remote.TrialTicket, a: Any = actor, d: Any = documents):
                    return await self._call(a, ticket, d, loss_errors)

                await trial.run_remote(call)

        async with anyio.create_task_group() as tg:
            for actor in pool:
                for _ in range(per_actor):
                    tg.start_soon(worker, actor)

    async def _call(
        self, actor: Any, ticket: remote.TrialTicket, documents: Any, loss_errors: tuple
    ) -> dict:
        """One trial on `actor`: its final record; a worker's death retries it as a new
        attempt (on the restarted actor); cancellation cancels it there and waits for its
        teardown."""
        losses = 0
        while True:
            ref = actor.run.remote(ticket.to_dict())
            try:
                return await _await_ref(ref)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await _cancel_remote(actor, ticket, ref, loss_errors)
                raise
            except loss_errors as exc:
                losses += 1
                reason = f"the Ray worker running it died ({type(exc).__name__})"
                log.warning("trial %s: %s; retrying", ticket.slot, reason)
                # Ray restarts the actor (max_restarts=-1): wait until it answers again
                await _wait_ready(actor, loss_errors)
                nxt = await remote.abandon_attempt(documents, ticket.slot, reason)
                if nxt is None or losses > WORKER_LOSS_RETRIES:
                    return await _latest(documents, ticket.slot, reason)
                ticket = remote.TrialTicket(
                    slot=ticket.slot, task=ticket.task, index=ticket.index, attempt=nxt
                )


async def _wait_ready(actor: Any, loss_errors: tuple, timeout: float = 180.0) -> None:
    with anyio.move_on_after(timeout):
        while True:
            try:
                await _await_ref(actor.ready.remote())
                return
            except loss_errors:
                await anyio.sleep(0.5)


async def _latest(documents: Any, slot: str, reason: str) -> dict[str, Any]:
    """The trial's last record after its worker died too often."""
    record = await remote.final_record(documents, slot)
    if record is None:
        raise AgentEnvError(
            f"trial {slot} could not start: {reason}, {WORKER_LOSS_RETRIES + 1} times"
        )
    return record


async def _await_ref(ref: Any) -> Any:
    """The value of a Ray ObjectRef, awaited without blocking the event loop."""
    import asyncio

    return await asyncio.wrap_future(ref.future())


async def _cancel_remote(actor: Any, ticket: remote.TrialTicket, ref: Any, loss: tuple) -> None:
    """Cancel the ticket's trial on its actor and wait (bounded) until it tore down."""
    try:
        await _await_ref(actor.cancel.remote(ticket.slot))
        with anyio.move_on_after(CANCEL_GRACE_SECONDS):
            await _await_ref(ref)
    except (Exception, *loss) as exc:  # the trial ended either way; its record says how
        log.debug("cancelled trial %s ended with %r", ticket.slot, exc)


def _loss_errors() -> tuple[type[BaseException], ...]:
    from ray import exceptions as rex

    return tuple(
        cls
        for cls in (
            getattr(rex, "ActorDiedError", None),
            getattr(rex, "RayActorError", None),
            getattr(rex, "WorkerCrashedError", None),
            getattr(rex, "ActorUnavailableError", None),
            getattr(rex, "NodeDiedError", None),
        )
        if cls is not None
    )


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on a `host:port` nobody listens on (Ray itself retries for minutes)."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or address in ("auto", "local"):
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as exc:
        raise AgentEnvError(
            f"cannot reach the Ray cluster at {address!r}: {exc} (start one with "
            "`ray start --head`, or leave --address out to start a local one)"
        ) from exc


def _connect(address: str | None, namespace: str | None) -> Any:
    if address:
        _check_reachable(address)
    import ray

    if not ray.is_initialized():
        try:
            ray.init(
                address=address,
                namespace=namespace,
                ignore_reinit_error=True,
                log_to_driver=False,
                include_dashboard=False,
                logging_level=logging.ERROR,
            )
        except Exception as exc:
            raise AgentEnvError(
                f"cannot connect to the Ray cluster at {address!r}: {type(exc).__name__}: "
                f"{exc} (start one with `ray start --head`, or leave --address out to start "
                "a local one; a cluster with token authentication needs its token, see "
                "docs/scale-out.md)"
            ) from exc
    return ray


def _alive_nodes(ray: Any) -> int:
    return sum(1 for node in ray.nodes() if node.get("Alive"))


def _check_stores(config: Any, nodes: int, address: str | None) -> None:
    """Refuse a cluster of several machines when a store the trials write to is local."""
    if nodes <= 1:
        return
    local = {
        kind: config.get("stores", kind)
        for kind in ("document", "object")
        if config.get("stores", kind) in LOCAL_STORES
    }
    if local:
        named = ", ".join(f"{k} = {v!r}" for k, v in local.items())
        raise AgentEnvError(
            f"the Ray cluster {address or ''} has {nodes} nodes but the run's stores are local "
            f"to this machine ([stores] {named}): workers on the other nodes could not read "
            "the bundle or write their records. Use shared stores (s3 + dynamodb, or gcs + "
            "firestore: see docs/stores.md) or a single-node cluster."
        )


def _stop_pool(ray: Any, pool: list[Any]) -> None:
    closing = [actor.close.remote() for actor in pool]
    try:
        ray.get(closing, timeout=60)
    except Exception as exc:  # a dead actor has nothing to close
        log.debug("closing the Ray actors: %r", exc)
    for actor in pool:
        try:
            ray.kill(actor, no_restart=True)
        except Exception:
            pass
