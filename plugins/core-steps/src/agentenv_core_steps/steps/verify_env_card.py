"""`verify_env_card`: fetch the card a deployed env serves and check it has what the protocol
requires (`name`, `protocolVersion`, `url`, `preferredTransport`, `capabilities`).

One result row per check; the card and the summary are kept under
`verifications.environment_card` (the key the existing product writes) for later steps.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.models import VerifierStep
from agentenv_core_steps.steps.reset_env import deployed_env

REQUIRED_CARD_FIELDS = ("name", "protocolVersion", "url", "preferredTransport", "capabilities")
TIMEOUT = 15.0


def row(check: str, passed: bool, justification: str) -> dict[str, Any]:
    """One verifier result row of the env validators."""
    return {"id": check, "result": passed, "description": check, "justification": justification}


async def fetch_card(url: str) -> tuple[dict[str, Any] | None, str]:
    """(the card JSON at `url`, "") or (None, why it could not be read)."""
    import httpx

    from agentenv_protocol import WELL_KNOWN_PATH
    from agentenv_protocol._http import tls_context

    try:
        async with httpx.AsyncClient(timeout=TIMEOUT, verify=tls_context()) as http:
            response = await http.get(url.rstrip("/") + WELL_KNOWN_PATH)
    except httpx.HTTPError as e:
        return None, f"{url}{WELL_KNOWN_PATH} is unreachable: {type(e).__name__}: {e}"
    if response.status_code != 200:
        return None, f"{WELL_KNOWN_PATH} answered HTTP {response.status_code}"
    try:
        card = response.json()
    except ValueError:
        return None, f"{WELL_KNOWN_PATH} is not JSON: {response.text[:120]!r}"
    if not isinstance(card, dict):
        return None, f"{WELL_KNOWN_PATH} is JSON but not an object"
    return card, ""


@attrs.frozen(kw_only=True)
class VerifyEnvCard(VerifierStep):
    type: ClassVar[str] = "verify_env_card"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {"env": ("env_id",)}

    env_id: str

    async def execute(self, ctx: StepContext) -> None:
        name, record = deployed_env(ctx, self.env_id)
        card, error = await fetch_card(record["url"])
        if card is None:
            rows = [row("card-accessible", False, error)]
            ctx.set(
                "verifications", "environment_card", value={"accessible": False, "error": error}
            )
            self.record(ctx, rows, f"env {name!r}: card not readable ({error})")
            return
        rows = [row("card-accessible", True, f"served at {record['url']}")]
        missing = []
        for field in REQUIRED_CARD_FIELDS:
            present = bool(card.get(field))
            if not present:
                missing.append(field)
            rows.append(
                row(
                    f"field:{field}",
                    present,
                    "present" if present else f"the card has no {field!r} (or it is empty)",
                )
            )
        declared = card.get("capabilities")
        capabilities = declared if isinstance(declared, dict) else {}
        tools = [t.get("name") for t in capabilities.get("tools") or [] if isinstance(t, dict)]
        extensions = [
            e.get("uri") for e in capabilities.get("extensions") or [] if isinstance(e, dict)
        ]
        ctx.set(
            "verifications",
            "environment_card",
            value={
                "environment_card": card,
                "validated_environment_card": {
                    "accessible": True,
                    "required_fields": {
                        f: {"present": f not in missing} for f in REQUIRED_CARD_FIELDS
                    },
                    "children_count": len(card.get("children_environments") or []),
                    "extensions": extensions,
                    "tools": tools,
                },
            },
        )
        summary = f"missing {', '.join(missing)}" if missing else "all required fields present"
        self.record(ctx, rows, f"env {name!r} card: {summary}")
