"""`agent-env env check PATH|URL`: start an env folder (a local process, or `--sandbox docker`),
or reach one already serving at URL, and validate its card, tool schemas and data plane, one
line per check (`agentenv_stored_entities.envcheck`).

Exit codes: 0 every check passed; 1 a check failed or the env did not start; 2 PATH is not an
env folder.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import anyio
import click

from agent_env.envs import ENV_TOML

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class _DeployContext:
    """What an `EnvType.deploy` asks of a step context, served by a session's sandboxes."""

    def __init__(self, session: Any, quiet: bool):
        self.session = session
        self.quiet = quiet

    async def create_sandbox(self, name: str, spec: Any, *, provider: str | None = None) -> Any:
        return await self.session.sandboxes.create(name, spec, provider)

    def sandbox_provider(self, name: str | None = None) -> Any:
        return self.session.sandboxes.provider(name or self.session.sandboxes.default_provider())

    def log(self, message: str) -> None:
        if not self.quiet:
            click.echo(message, err=True)


def _env_folder(path: Path) -> Path:
    """`path` when it is an env folder; else a UsageError naming what it is and what to give."""
    if not path.is_dir():
        raise click.UsageError(f"{path}: no such folder")
    if (path / ENV_TOML).is_file() or (path / "Dockerfile").is_file():
        return path
    envs = (
        sorted(p.name for p in (path / "envs").iterdir() if p.is_dir())
        if (path / "envs").is_dir()
        else []
    )
    hint = (
        f" (a bundle: did you mean {path / 'envs' / envs[0]}?"
        + (f" its envs: {', '.join(envs)})" if len(envs) > 1 else ")")
        if envs
        else ""
    )
    raise click.UsageError(f"{path}: not an env folder: it has no {ENV_TOML} or Dockerfile{hint}")


def _parse(session: Any, folder: Path) -> Any:
    """The env folder parsed by its env type (ValueError / PluginError / TOMLDecodeError)."""
    config: dict[str, Any] = {}
    if (folder / ENV_TOML).is_file():
        config = tomllib.loads((folder / ENV_TOML).read_text(encoding="utf-8"))
    registry = session.plugins.env_types
    type_name = config.get("type")
    if type_name is None:
        claimed = sorted(
            n for n in registry if getattr(registry.get(n), "default_for", None) == "env"
        )
        if not claimed:
            raise ValueError(f"{ENV_TOML}: type: not set, and no installed env type is the default")
        type_name = claimed[0]
    env_cls = registry.get(type_name)
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    problems = env_cls.problems(config, files)
    if problems:
        raise ValueError("; ".join(problems))
    return env_cls.from_folder(folder.resolve().name, folder.resolve(), config)


async def _run(folder: Path, provider: str, timeout: float, quiet: bool) -> dict[str, Any]:
    from agent_env.cli.toolkit import Session
    from agent_env.runs.service import check_provider
    from agentenv_stored_entities.envcheck import FAIL, PASS, Check, probe

    checks: list[Check] = []
    result: dict[str, Any] = {"path": str(folder), "sandbox": provider, "checks": checks}
    session = await Session.open()
    try:
        check_provider(session, provider)
        try:
            env = _parse(session, folder)
        except Exception as e:  # every way a folder fails to parse is this check's finding
            checks.append(Check(id="config", status=FAIL, detail=f"{folder}: {e}"))
            return result
        checks.append(Check(id="config", status=PASS, detail=f"{env.type} env {env.name!r}"))
        try:
            with anyio.fail_after(timeout):
                info = await env.deploy(
                    _DeployContext(session, quiet),
                    sandbox_name=f"env-check:{env.name}",
                    provider=provider,
                )
        except Exception as e:  # the env not coming up, for whatever reason, is the finding
            detail = str(e) or type(e).__name__
            checks.append(Check(id="start", status=FAIL, detail=detail))
            return result
        result["url"] = info["url"]
        checks.append(Check(id="start", status=PASS, detail=f"up on {provider} at {info['url']}"))
        checks.extend(await probe(info["url"], timeout=timeout))
        return result
    finally:
        await session.sandboxes.teardown_all()
        await session.close()


@click.command("check")
@click.argument("target", metavar="PATH|URL")
@click.option(
    "--sandbox",
    "provider",
    default="local",
    show_default=True,
    metavar="NAME",
    help="Where to start the env: local (a host process) or docker (its image).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=180.0,
    show_default=True,
    help="Seconds to wait for the env to start, and for each probe.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def env_check(target: str, provider: str, timeout: float, as_json: bool) -> int:
    """Start the env folder PATH (or probe an env already serving at URL) and validate it:
    its card (name, protocolVersion, url,
    capabilities), its tools (names; input schemas are valid JSON Schema; card and MCP
    tools/list agree), its data plane (data/get, data/reset, data/add round trip) and its
    JSON-RPC error codes. An env started from PATH is stopped afterwards; one at URL is
    left running (and its data is reset and re-added by the round trip).

    Exit codes: 0 all passed, 1 a check failed, 2 PATH is not an env folder."""
    if "," in provider:
        raise click.UsageError("--sandbox takes one provider here, not a fallback chain")
    if target.startswith(("http://", "https://")):
        result = anyio.run(_probe_url, target.rstrip("/"), timeout)
    else:
        result = anyio.run(_run, _env_folder(Path(target)), provider, timeout, as_json)
    checks = result["checks"]
    ok = all(c.ok for c in checks)
    if as_json:
        result = {**result, "ok": ok, "checks": [_row(c) for c in checks]}
        click.echo(json.dumps(result, indent=2))
    else:
        for c in checks:
            click.echo(f"{c.status:<4}  {c.id}: {c.detail}")
        failed = [c.id for c in checks if not c.ok]
        summary = f"{len(checks) - len(failed)}/{len(checks)} checks passed or skipped"
        click.echo(summary + (f"; failed: {', '.join(failed)}" if failed else ""), err=True)
    return EXIT_OK if ok else EXIT_FAILED


async def _probe_url(url: str, timeout: float) -> dict[str, Any]:
    from agentenv_stored_entities.envcheck import probe

    return {"path": None, "url": url, "sandbox": None, "checks": await probe(url, timeout=timeout)}


def _row(check: Any) -> dict[str, Any]:
    return {"id": check.id, "status": check.status, "detail": check.detail}
