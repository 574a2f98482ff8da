"""Times and durations.

memsolve accepts two kinds of time, never mixed in one solve:

- ``number``: plain numbers in abstract units (the seeds use hours), durations are numbers too;
- ``rfc3339``: timestamps like ``2026-11-30T09:00:00Z``, durations like ``90m``, ``24h``, ``7d``
  (units s, m, h, d, w), held internally as seconds.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

NUMBER = "number"
RFC3339 = "rfc3339"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


class TimeValueError(ValueError):
    """A time or duration that cannot be read; the caller adds the location."""


def time_kind(value: object) -> str | None:
    """``number`` or ``rfc3339`` for a timestamp value, None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, datetime):
        return RFC3339
    if isinstance(value, str) and _RFC3339.match(value.strip()):
        return RFC3339
    return None


def parse_timestamp(value: object) -> float:
    """A timestamp as a float: the number itself, or seconds since the epoch."""
    if isinstance(value, bool):
        raise TimeValueError(f"expected a number or an RFC 3339 time, got `{value}`")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):  # YAML turns unquoted timestamps into datetimes
        moment = value
    elif isinstance(value, str) and _RFC3339.match(value.strip()):
        text = value.strip().replace("z", "Z").replace("Z", "+00:00")
        moment = datetime.fromisoformat(text)
    else:
        raise TimeValueError(
            f"expected a number or an RFC 3339 time like `2026-11-30T09:00:00Z`, got `{value}`"
        )
    if moment.tzinfo is None:
        raise TimeValueError(f"time `{value}` has no timezone; add `Z` or an offset")
    return moment.astimezone(timezone.utc).timestamp()


def parse_duration(value: object, kind: str) -> float:
    """A duration in the units of ``kind``: a number for ``number`` times, ``24h`` for RFC 3339."""
    if isinstance(value, bool):
        raise TimeValueError(f"expected a duration, got `{value}`")
    if kind == NUMBER:
        if isinstance(value, (int, float)):
            return float(value)
        raise TimeValueError(
            f"times are plain numbers here, so durations must be numbers too, got `{value}`"
        )
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match:
            return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if isinstance(value, (int, float)):
        raise TimeValueError(
            f"times are RFC 3339 here, so durations need a unit like `24h` or `7d`, got `{value}`"
        )
    raise TimeValueError(f"expected a duration like `90m`, `24h` or `7d`, got `{value}`")


def format_time(value: float, kind: str) -> float | str:
    """A time for output, in the kind it was given."""
    if kind == RFC3339:
        moment = datetime.fromtimestamp(value, tz=timezone.utc)
        return moment.isoformat().replace("+00:00", "Z")
    return value


def now_seconds() -> float:
    return datetime.now(tz=timezone.utc).replace(microsecond=0).timestamp()
