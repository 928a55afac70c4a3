"""Wire types and constants of the AgentEnv protocol v1 (the card, data-plane parts, paths).

Field names follow the published protocol exactly; these models are what a card or a
data-plane message looks like on the wire.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentenv_protocol.constants import (  # noqa: F401 - re-exported: the wire names live here too
    CLOCK_EXTENSION_URI,
    DATA_OBJECTS_EXTENSION_URI,
    DEFAULT_HOST,
    DEFAULT_PORT,
    ENV_SECRET_ENV,
    ENV_SECRET_HEADER,
    EXT_PREFIX,
    HIDDEN_BY_DEFAULT_META_KEY,
    INTAKE_EXTENSION_URI,
    MCP_PATH,
    MCP_TRANSPORT,
    METHOD_ADD,
    METHOD_GET,
    METHOD_RESET,
    PROTOCOL_VERSION,
    READY_PATH,
    RPC_PATH,
    WELL_KNOWN_PATH,
)


def error_body(code: str, message: str, **fields: Any) -> dict:
    """The JSON body of a failed REST (extension) call; `fields` are `retryable`, `applied`, `hint`."""
    return {"ok": False, "error": {"code": code, "message": message, **fields}}


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class FileWithBytes(_Wire):
    bytes: str
    mimeType: str | None = None
    name: str | None = None


class FileWithUri(_Wire):
    uri: str
    mimeType: str | None = None
    name: str | None = None


class TextPart(_Wire):
    kind: Literal["text"] = "text"
    text: str
    metadata: dict | None = None


class FilePart(_Wire):
    kind: Literal["file"] = "file"
    file: FileWithBytes | FileWithUri
    metadata: dict | None = None


class DataPart(_Wire):
    kind: Literal["data"] = "data"
    data: dict
    metadata: dict | None = None


Part = Annotated[TextPart | FilePart | DataPart, Field(discriminator="kind")]


class AddDataRequest(BaseModel):
    parts: list[Part] = Field(min_length=1)


class ResetDataResponse(BaseModel):
    pass


class AddDataResponse(BaseModel):
    pass


class GetDataResponse(BaseModel):
    parts: list[Part]


class EnvironmentInterface(_Wire):
    url: str
    transport: str


class EnvironmentExtension(_Wire):
    uri: str
    description: str | None = None
    params: dict | None = None
    required: bool | None = None


class EnvironmentTool(_Wire):
    name: str
    description: str | None = None
    inputSchema: dict | None = None


class EnvironmentCapabilities(_Wire):
    extensions: list[EnvironmentExtension] | None = None
    tools: list[EnvironmentTool] | None = None
    operations: list[str] | None = None


class EnvironmentCard(_Wire):
    name: str
    protocolVersion: str = PROTOCOL_VERSION
    url: str = RPC_PATH
    preferredTransport: str = "JSONRPC"
    additionalInterfaces: list[EnvironmentInterface] = Field(default_factory=list)
    capabilities: EnvironmentCapabilities = Field(default_factory=EnvironmentCapabilities)
    children_environments: list[EnvironmentCard] | None = None

    def mcp_path(self) -> str:
        """Where this env serves MCP: its declared `mcp` interface, else `/mcp`."""
        for iface in self.additionalInterfaces:
            if iface.transport == MCP_TRANSPORT:
                return iface.url
        return MCP_PATH


EnvironmentCard.model_rebuild()
