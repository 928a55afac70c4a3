"""Coordinate spaces: `frame` (the frame's own pixels) and `norm` (0..scale over the frame's
width and height). A point outside the frame or the range is refused, never clamped; the one
mapping to frame pixels keeps odd sizes exact."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentenv_protocol.computer.errors import InvalidArgument, OutOfBounds
from agentenv_protocol.computer.settings import SPACES

if TYPE_CHECKING:
    from agentenv_protocol.computer.frames import Frame

MAX_NORM_SCALE = 1_000_000


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_space(
    space: str | None, scale: object, default_space: str, default_scale: int
) -> tuple[str, int]:
    """(space, norm scale) of a call: the given ones checked, else the defaults."""
    space = default_space if space is None else space
    if space not in SPACES:
        raise InvalidArgument(f"space is 'frame' or 'norm', got {space!r}")
    scale = default_scale if scale is None else scale
    if isinstance(scale, float) and scale.is_integer():
        scale = int(scale)
    if not isinstance(scale, int) or isinstance(scale, bool) or not 1 <= scale <= MAX_NORM_SCALE:
        raise InvalidArgument(
            f"norm_scale is a whole number from 1 to {MAX_NORM_SCALE}, got {scale!r}"
        )
    return space, scale


def frame_point(frame: Frame, x: object, y: object, space: str, scale: int) -> tuple[float, float]:
    """The frame pixel of point (x, y) given in `space`; OutOfBounds outside the frame (frame
    space: 0 <= x < width) or the range (norm space: 0 <= x <= scale)."""
    if not (_number(x) and _number(y)):
        raise InvalidArgument(f"a point is two numbers, got ({x!r}, {y!r})")
    width, height = frame.width, frame.height
    if space == "frame":
        if not (0 <= x < width and 0 <= y < height):  # type: ignore[operator]
            raise OutOfBounds(
                f"({x}, {y}) is outside {frame.frame_id}, which is {width}×{height} pixels"
            )
        return x, y  # type: ignore[return-value]
    if not (0 <= x <= scale and 0 <= y <= scale):  # type: ignore[operator]
        raise OutOfBounds(f"({x}, {y}) is outside the norm range 0 to {scale}")
    return min(x * width / scale, width - 1), min(y * height / scale, height - 1)  # type: ignore[operator]


def frame_box(frame: Frame, region: object, space: str, scale: int) -> tuple[int, int, int, int]:
    """The frame pixels (left, top, right, bottom) of a region [x1, y1, x2, y2] in `space`."""
    if not isinstance(region, list | tuple) or len(region) != 4 or not all(map(_number, region)):
        raise InvalidArgument(f"region is [x1, y1, x2, y2], four numbers, got {region!r}")
    x1, y1, x2, y2 = region
    if space == "frame":
        limit_x, limit_y = frame.width, frame.height
        box = (x1, y1, x2, y2)
    else:
        limit_x = limit_y = scale
        box = (
            x1 * frame.width / scale,
            y1 * frame.height / scale,
            x2 * frame.width / scale,
            y2 * frame.height / scale,
        )
    inside = 0 <= x1 < x2 <= limit_x and 0 <= y1 < y2 <= limit_y
    left, top, right, bottom = (round(v) for v in box)
    if not inside or right <= left or bottom <= top:
        raise OutOfBounds(
            f"region {list(region)} is not a non-empty box inside {frame.frame_id} "
            f"({'0 to ' + str(scale) if space == 'norm' else f'{frame.width}×{frame.height} pixels'})"
        )
    return left, top, right, bottom
