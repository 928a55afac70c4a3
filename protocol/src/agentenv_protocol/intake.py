"""The intake declaration: which data-plane parts and formats an env loads (`data/add`) and exports
(`data/get`), advertised on its card as the `urn:agentenv:intake/v1` extension, and the fit check
that tells a caller, before it sends data, what the env would not accept.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentenv_protocol.client_helpers import INTAKE_EXTENSION_URI
from agentenv_protocol.types import EnvironmentExtension


class IntakeFormat(BaseModel):
    """One accepted shape: a part kind, a format name, and optionally how it loads and its tables."""

    model_config = ConfigDict(extra="allow")

    part: Literal["data", "file", "text"]
    format: str
    mimeTypes: list[str] | None = None
    load: Literal["additive", "replace"] | None = None
    bundleLayout: str | None = None
    tables: dict[str, dict[str, Any]] | None = None
    """Per collection name, a JSON-schema-like object; only its `required` list is checked."""


class IntakeDeclaration(BaseModel):
    """What `data/add` accepts and what `data/get` returns. Unset lists make no claim."""

    model_config = ConfigDict(extra="allow")

    add: list[IntakeFormat] | None = None
    get: list[IntakeFormat] | None = None


def intake_extension(declaration: IntakeDeclaration) -> EnvironmentExtension:
    """The card entry for `declaration`. An empty declaration has empty params, read back as no claim."""
    return EnvironmentExtension(
        uri=INTAKE_EXTENSION_URI,
        description="Data-plane intake: the parts and formats data/add loads and data/get returns.",
        params=declaration.model_dump(exclude_none=True),
    )


def intake_fit_check(declaration: dict | None, data: dict) -> list[str]:
    """Why `data` (collections of records, sent as one data part) would not load; [] when it fits.

    No declaration means no claim, so nothing is flagged. Extra fields in records and scalar
    top-level values are tolerated: an export is a superset of what loads.
    """
    if not declaration:
        return []
    accepted = [
        f for f in IntakeDeclaration.model_validate(declaration).add or [] if f.part == "data"
    ]
    if not accepted:
        return [
            "the env does not accept part=data on data/add (its intake declares no data format)"
        ]
    tables: dict[str, dict[str, Any]] = {}
    for fmt in accepted:
        tables.update(fmt.tables or {})
    if not tables:
        return []
    issues: list[str] = []
    for name, records in data.items():
        if not isinstance(records, list):
            continue
        if name not in tables:
            issues.append(
                f"collection {name!r} is not accepted (the env's intake declares: {', '.join(sorted(tables))})"
            )
            continue
        required = tables[name].get("required") or []
        for field in required:
            missing = [i for i, r in enumerate(records) if isinstance(r, dict) and field not in r]
            if missing:
                issues.append(
                    f"{name}: missing required field {field!r} in {len(missing)} of {len(records)} "
                    f"record(s) (first: index {missing[0]})"
                )
    return issues
