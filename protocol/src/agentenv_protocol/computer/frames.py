"""Frames: each screenshot (or crop of one) kept by id with the geometry that maps its pixels
back to the screen, the input count when it was taken, and each caller's latest one. The last
`KEEP` frames are kept; a frame taken before the display changed can't place a point."""

from __future__ import annotations

import base64
import io
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

import attrs

from agentenv_protocol.computer.errors import InvalidArgument, StaleFrame
from agentenv_protocol.computer.operations import Display

KEEP = 16
FORMATS = {"png": "image/png", "jpeg": "image/jpeg"}
DEFAULT_JPEG_QUALITY = 80

#: (input calls in all, {identity: input calls of that identity}) when a frame was taken.
Mark = tuple[int, dict]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(kw_only=True)
class Frame:
    """One frame: its image, the display it was taken on, and where it sits in its root frame."""

    frame_id: str
    image: Any
    display: Display
    mark: Mark
    identity: str
    captured_at: str
    parent_frame_id: str | None = None
    origin: tuple[int, int] = (0, 0)

    @property
    def width(self) -> int:
        return int(self.image.size[0])

    @property
    def height(self) -> int:
        return int(self.image.size[1])

    def to_screen(self, fx: float, fy: float) -> tuple[int, int]:
        """The screen pixel under frame pixel (fx, fy)."""
        scale = self.display.scale or 1
        return int((self.origin[0] + fx) // scale), int((self.origin[1] + fy) // scale)

    def from_screen(self, sx: int, sy: int) -> tuple[float, float]:
        """The frame pixel of screen pixel (sx, sy) (may be outside the frame)."""
        scale = self.display.scale or 1
        fx, fy = sx * scale - self.origin[0], sy * scale - self.origin[1]
        return (int(fx) if float(fx).is_integer() else fx), (
            int(fy) if float(fy).is_integer() else fy
        )

    def contains(self, fx: float, fy: float) -> bool:
        return 0 <= fx < self.width and 0 <= fy < self.height

    def data(self) -> dict:
        """The frame's geometry as the screenshot tool answers it."""
        data = {
            "frame_id": self.frame_id,
            "width": self.width,
            "height": self.height,
            "display": self.display.as_dict(),
            "captured_at": self.captured_at,
        }
        if self.parent_frame_id is not None:
            data["parent_frame_id"] = self.parent_frame_id
        return data


@attrs.frozen
class Lookup:
    """A frame lookup's outcome: `result()` is the frame, or raises why it can't be used."""

    frame: Frame | None = None
    error: StaleFrame | None = None

    def result(self) -> Frame:
        if self.error is not None:
            raise self.error
        assert self.frame is not None
        return self.frame


@attrs.define
class FrameStore:
    """The kept frames, newest last, and each identity's latest frame id."""

    keep: int = KEEP
    display: Display | None = None
    _frames: OrderedDict = attrs.field(factory=OrderedDict)
    _latest: dict = attrs.field(factory=dict)
    _issued: int = 0

    def add(
        self,
        image: Any,
        display: Display,
        mark: Mark,
        *,
        identity: str,
        parent: Frame | None = None,
        origin: tuple[int, int] = (0, 0),
    ) -> Frame:
        self._issued += 1
        frame = Frame(
            frame_id=f"f{self._issued}",
            image=image,
            display=display,
            mark=mark,
            identity=identity,
            captured_at=parent.captured_at if parent else now_iso(),
            parent_frame_id=parent.frame_id if parent else None,
            origin=origin,
        )
        if parent is None:
            self.display = display
        self._frames[frame.frame_id] = frame
        while len(self._frames) > self.keep:
            self._frames.popitem(last=False)
        self._latest[identity] = frame.frame_id
        return frame

    def get(self, frame_id: str | None, identity: str) -> Lookup:
        """The frame `frame_id` (the identity's latest when None), checked against the display."""
        if frame_id is None:
            frame_id = self._latest.get(identity)
            if frame_id is None:
                return Lookup(error=StaleFrame("there is no frame yet: take a screenshot first"))
        frame = self._frames.get(frame_id)
        if frame is None:
            number = frame_id[1:] if isinstance(frame_id, str) and frame_id[:1] == "f" else ""
            if number.isdigit() and 0 < int(number) <= self._issued:
                message = f"{frame_id} is no longer kept (only the last {self.keep} frames are)"
            else:
                message = f"there is no frame {frame_id!r}"
            return Lookup(error=StaleFrame(message + ": take a screenshot"))
        if self.display is not None and frame.display != self.display:
            return Lookup(
                error=StaleFrame(
                    f"{frame_id} was captured at {frame.display.describe_with_scale()} and the "
                    f"display is now {self.display.describe_with_scale()}: take a screenshot"
                )
            )
        return Lookup(frame=frame)

    def latest(self, identity: str) -> Frame | None:
        frame_id = self._latest.get(identity)
        return self._frames.get(frame_id) if frame_id else None


def as_image(value: Any, display: Display) -> Any:
    """A PIL image of what `@capture` returned (a PIL image, an `Image`, or encoded bytes),
    checked against the display it was taken on (width*scale by height*scale pixels)."""
    from PIL import Image as PILImage

    from agentenv_protocol.computer.results import ENCODED_MODES, RAW_MODES, Image

    if isinstance(value, bytes | bytearray):
        value = Image(0, 0, bytes(value), "png")
    if isinstance(value, Image):
        image: Any
        if value.mode in ENCODED_MODES:
            image = PILImage.open(io.BytesIO(value.data))
            image.load()
        elif value.mode in RAW_MODES:
            mode, raw = RAW_MODES[value.mode]
            image = PILImage.frombytes(mode, (value.width, value.height), value.data, "raw", raw)
        else:
            raise TypeError(
                f"@capture returned an Image of mode {value.mode!r}, not one of "
                f"{[*ENCODED_MODES, *RAW_MODES]}"
            )
        value = image
    if not isinstance(value, PILImage.Image):
        raise TypeError(f"@capture returned {type(value).__name__}, not an Image")
    expected = (round(display.width * display.scale), round(display.height * display.scale))
    if value.size != expected:
        raise ValueError(
            f"@capture returned {value.size[0]}×{value.size[1]}, but the display at scale "
            f"{display.scale:g} is {expected[0]}×{expected[1]}"
        )
    return value


def check_encoding(format: str, quality: int | None) -> tuple[str, int | None]:
    if format not in FORMATS:
        raise InvalidArgument(f"format is 'png' or 'jpeg', got {format!r}")
    if quality is not None and format != "jpeg":
        raise InvalidArgument("quality is for format 'jpeg'")
    if format == "jpeg":
        quality = DEFAULT_JPEG_QUALITY if quality is None else quality
        if not 1 <= quality <= 95:
            raise InvalidArgument(f"quality is from 1 to 95, got {quality}")
    return format, quality


def encode(image: Any, format: str, quality: int | None) -> dict:
    """An MCP image content block of `image`."""
    buffer = io.BytesIO()
    if format == "jpeg":
        image.convert("RGB").save(buffer, "JPEG", quality=quality)
    else:
        image.save(buffer, "PNG")
    return {
        "type": "image",
        "data": base64.b64encode(buffer.getvalue()).decode(),
        "mimeType": FORMATS[format],
    }
