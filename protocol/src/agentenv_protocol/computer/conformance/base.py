"""What the probe's checks share: a check's outcome, its failure, and reading tool answers."""

from __future__ import annotations

import base64
import io
from typing import Any

import attrs

PROBE_ROLE = "agentenv-probe"
COLOUR_TOLERANCE = 24


class Failed(Exception):
    """A check's failure, with what it saw."""


@attrs.frozen(kw_only=True)
class CheckResult:
    """One check's outcome: `status` is passed, failed or unverified; `detail` says what was
    seen; `extensions` are the URIs the check exercises."""

    section: str
    name: str
    status: str
    detail: str = ""
    extensions: tuple[str, ...] = ()


def _short(uri: str) -> str:
    return uri.removeprefix("urn:agentenv:")


def _text(result: Any) -> str:
    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "text":
            return block.text
    return ""


def _image(result: Any) -> Any:
    from PIL import Image

    for block in getattr(result, "content", None) or []:
        if getattr(block, "type", None) == "image":
            return Image.open(io.BytesIO(base64.b64decode(block.data))).convert("RGB")
    raise Failed("the answer has no image")


def _colour(value: str) -> tuple[int, int, int]:
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _close(a: tuple, b: tuple) -> bool:
    return all(abs(x - y) <= COLOUR_TOLERANCE for x, y in zip(a, b, strict=False))
