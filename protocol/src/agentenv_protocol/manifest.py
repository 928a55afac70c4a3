"""Interface manifests: how an env describes its entities and actions to a generated interface (a CLI).

The models are lenient readers (unknown keys are dropped, so a newer server's manifest still
loads) and compact writers (`to_json` leaves out unset optionals and sorts nothing away: the
field order is the model's, so a committed golden file stays stable).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MANIFEST_VERSION = "0.1.0"
INTERFACE_MANIFEST_PATH = "/agentenv/interface-manifest"
GET_INTERFACES_EXTENSION_URI = "urn:agentenv:get-interfaces/v1"

OperationKind = Literal["list", "read", "create", "update", "delete"]
CLI_COMMANDS: dict[str, str] = {
    "list": "list",
    "read": "get",
    "create": "create",
    "update": "update",
    "delete": "delete",
}
"""The CLI verb each operation kind is offered under."""

_SEMVER = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def _release(version: object) -> tuple[int, int, int] | None:
    if not isinstance(version, str):
        return None
    match = _SEMVER.fullmatch(version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def manifest_compatible(served: object, supported: str = MANIFEST_VERSION) -> bool:
    """Whether a reader built for `supported` can use a manifest that declares `served`.

    Semantic versioning: the major must match, and below 1.0 the minor too (a 0.x minor is a
    breaking release). A missing or malformed version is never compatible.
    """
    have, want = _release(served), _release(supported)
    if have is None or want is None or have[0] != want[0]:
        return False
    return have[0] != 0 or have[1] == want[1]


class ManifestModel(BaseModel):
    """Base of every manifest model: extra keys are ignored, `to_json` writes the compact form."""

    model_config = ConfigDict(extra="ignore")

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True, indent=2) + "\n"


class FieldSpec(ManifestModel):
    name: str
    type: str
    format: str | None = None
    enum: list[str] | None = None
    description: str | None = None
    required: bool = False
    read_only: bool = False


class Relationship(ManifestModel):
    field: str
    references: str
    many: bool = False


class ParamSpec(ManifestModel):
    name: str
    type: str
    item_type: str | None = None
    required: bool = False
    enum: list[str] | None = None


class Operation(ManifestModel):
    kind: OperationKind
    tool: str
    summary: str | None = None
    description: str | None = None
    required: list[str] = Field(default_factory=list)
    params: list[ParamSpec] = Field(default_factory=list)


class Action(ManifestModel):
    name: str
    tool: str
    description: str | None = None
    params: list[ParamSpec] = Field(default_factory=list)


class Entity(ManifestModel):
    name: str
    fields: list[FieldSpec] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    operations: list[Operation] = Field(default_factory=list)


class InterfaceManifest(ManifestModel):
    """The structural core: what entities the service has and what tools act on them."""

    service: str
    manifest_version: str = MANIFEST_VERSION
    entities: list[Entity] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)


class CliCommand(ManifestModel):
    tool: str
    summary: str | None = None
    description: str | None = None
    params: list[ParamSpec] = Field(default_factory=list)


class CliEntity(ManifestModel):
    entity: str
    commands: dict[str, CliCommand] = Field(default_factory=dict)


class CliAction(ManifestModel):
    name: str
    tool: str
    params: list[ParamSpec] = Field(default_factory=list)
    description: str | None = None


class CliManifest(ManifestModel):
    """The CLI projection: per entity the commands (`list`, `get`, ...) and the tools behind them."""

    service: str
    manifest_version: str = MANIFEST_VERSION
    interface: Literal["cli"] = "cli"
    entities: list[CliEntity] = Field(default_factory=list)
    actions: list[CliAction] = Field(default_factory=list)
