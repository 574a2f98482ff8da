"""Times and durations.

memsolve accepts two kinds of time, never mixed in one solve:

- ``number``: plain numbers in abstract units (the seeds use hours), durations are numbers too;
- ``rfc3339``: timestamps like ``2026-11-30T09:00:00Z``, durations like ``90m``, ``24h``, ``7d``
  (units s, m, h, d, w), held internally as seconds.

RFC 3339 times must name a real instant between ``0001-01-01T00:00:00Z`` and
``9999-12-31T23:59:59Z`` once their offset is applied: month 13, 30 February, hour 24, minute
60, year 0000 and offsets of 24 hours or more are refused, and so are leap seconds (``:60``),
which an instant held as seconds since the epoch cannot represent. Digits are ASCII ``0-9``
only, and so are the spaces allowed around a value. Durations longer than that span are
refused too. Every refusal is a :class:`TimeValueError` with a one-line message naming the
value (cut to 40 characters); :func:`format_time` never fails (it clamps).
"""

from __future__ import annotations

import calendar
import math
import re
from datetime import datetime, timedelta, timezone
from functools import cache

NUMBER = "number"
RFC3339 = "rfc3339"

_DURATION_SHAPE = r"[ \t\r\n]*(\d+(?:\.\d+)?)[ \t\r\n]*(s|m|h|d|w)[ \t\r\n]*"
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_RFC3339_SHAPE = r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|([+-])(\d{2}):(\d{2}))"


# re.ASCII: without it \d matches any Unicode digit (Arabic-Indic, fullwidth...) and float() reads them
_RFC3339 = re.compile(_RFC3339_SHAPE, re.ASCII)  # a record's time: compiled once, read for every record


# compiled on first use (a round with plain-number durations reads none as text)
@cache
def _duration() -> re.Pattern[str]:
    return re.compile(_DURATION_SHAPE, re.ASCII)


# the same shapes with any Unicode digit: only to explain why such a time is refused
@cache
def _rfc3339_any_digits() -> re.Pattern[str]:
    return re.compile(_RFC3339_SHAPE)


@cache
def _duration_any_digits() -> re.Pattern[str]:
    return re.compile(_DURATION_SHAPE)


_SPACE = " \t\r\n"  # what may surround a time or a duration (str.strip() would take any Unicode space)

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_FIRST = datetime.min.replace(tzinfo=timezone.utc)  # 0001-01-01T00:00:00Z
_LAST = datetime.max.replace(tzinfo=timezone.utc)  # 9999-12-31T23:59:59.999999Z
MIN_SECONDS = (_FIRST - _EPOCH).total_seconds()
MAX_SECONDS = (_LAST.replace(microsecond=0) - _EPOCH).total_seconds()  # 9999-12-31T23:59:59Z
MAX_DURATION = MAX_SECONDS - MIN_SECONDS  # no two RFC 3339 times are further apart


class TimeValueError(ValueError):
    """A time or duration that cannot be read; the caller adds the location."""


def _show(value: object) -> str:
    """A user value for a message: cut to 40 characters."""
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def time_kind(value: object) -> str | None:
    """``number`` or ``rfc3339`` for a timestamp value, None when it is neither.

    Judges the shape only (``rfc3339`` for ``2026-13-01T00:00:00Z`` too), so that one bad time
    does not change the kind of the file; :func:`parse_timestamp` says what is wrong with it.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, datetime):
        return RFC3339
    if isinstance(value, str) and _RFC3339.fullmatch(value.strip(_SPACE)):
        return RFC3339
    return None


def parse_timestamp(value: object) -> float:
    """A timestamp as a float: the number itself, or seconds since the epoch."""
    if isinstance(value, bool):
        raise TimeValueError(f"expected a number or an RFC 3339 time, got `{value}`")
    if isinstance(value, (int, float)):
        return _finite(value, "a time")
    if isinstance(value, datetime):  # YAML turns unquoted timestamps into datetimes
        if value.tzinfo is None:
            raise TimeValueError(f"time `{_show(value)}` has no timezone; add `Z` or an offset")
        return _in_range(value, value)
    if isinstance(value, str):
        text = value.strip(_SPACE)
        match = _RFC3339.fullmatch(text)
        if match:
            zone = match.group(8)
            try:  # the fast path (10,000 records a turn): C's parser, then what it does not check
                moment = datetime.fromisoformat(text[: match.start(8)] + ("+00:00" if zone in "Zz" else zone))
            except ValueError:
                moment = None
            if moment is not None and (match.group(11) or "") <= "59" and match.group(1) not in ("0001", "9999"):
                return moment.timestamp()
            # a field out of range, an offset of 60 minutes (fromisoformat takes +05:60), a time near the
            # ends of the range that its offset may push past them, or a Python whose fromisoformat is stricter
            return _in_range(_moment(value, match), value)
        if not value.isascii() and _rfc3339_any_digits().fullmatch(value.strip(_SPACE)):
            raise TimeValueError(f"time `{_show(value)}` has digits other than ASCII 0-9")
    raise TimeValueError(
        f"expected a number or an RFC 3339 time like `2026-11-30T09:00:00Z`, got `{_show(value)}`"
    )


def _moment(value: str, match: re.Match[str]) -> datetime:
    """The datetime an RFC 3339 string names, each field checked so that the message can say which."""
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction, zone, sign, offset_hours, offset_minutes = match.group(7, 8, 9, 10, 11)
    shown = _show(value)
    if year == 0:
        raise TimeValueError(f"time `{shown}`: year 0000 does not exist; years run from 0001 to 9999")
    if not 1 <= month <= 12:
        raise TimeValueError(f"time `{shown}`: month {month:02d} does not exist")
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        raise TimeValueError(
            f"time `{shown}`: day {day:02d} does not exist in {calendar.month_name[month]} {year:04d}"
        )
    if hour > 23:
        raise TimeValueError(f"time `{shown}`: hour {hour:02d} does not exist; hours run from 00 to 23")
    if minute > 59:
        raise TimeValueError(f"time `{shown}`: minute {minute:02d} does not exist; minutes run from 00 to 59")
    if second == 60:
        raise TimeValueError(f"time `{shown}` is a leap second, which memsolve does not support; use `:59`")
    if second > 59:
        raise TimeValueError(f"time `{shown}`: second {second:02d} does not exist; seconds run from 00 to 59")
    offset = timedelta(0)
    if zone not in ("Z", "z"):
        if int(offset_hours) > 23 or int(offset_minutes) > 59:
            raise TimeValueError(f"time `{shown}`: offset `{zone}` is out of range; offsets run from -23:59 to +23:59")
        offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
        if sign == "-":
            offset = -offset
    micro = int(fraction[:6].ljust(6, "0")) if fraction else 0  # finer than microseconds: cut
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone(offset))


def _in_range(moment: datetime, value: object) -> float:
    # aware datetimes compare and subtract through their offsets: neither builds year 0 or 10000
    if moment < _FIRST:
        raise TimeValueError(f"time `{_show(value)}` is before 0001-01-01T00:00:00Z once its offset is applied")
    if moment > _LAST:
        raise TimeValueError(f"time `{_show(value)}` is after 9999-12-31T23:59:59Z once its offset is applied")
    return (moment - _EPOCH).total_seconds()


def parse_duration(value: object, kind: str) -> float:
    """A duration in the units of ``kind``: a number for ``number`` times, ``24h`` for RFC 3339."""
    if isinstance(value, bool):
        raise TimeValueError(f"expected a duration, got `{value}`")
    if kind == NUMBER:
        if isinstance(value, (int, float)):
            return _finite(value, "a duration")
        raise TimeValueError(
            f"times are plain numbers here, so durations must be numbers too, got `{_show(value)}`"
        )
    if isinstance(value, str):
        match = _duration().fullmatch(value)
        if match:
            seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]  # inf for 400 digits
            if not seconds <= MAX_DURATION:
                raise TimeValueError(
                    f"duration `{_show(value)}` is longer than the 9,999 years RFC 3339 times can span"
                )
            return seconds
        if not value.isascii() and _duration_any_digits().fullmatch(value):
            raise TimeValueError(f"duration `{_show(value)}` has digits other than ASCII 0-9")
    if isinstance(value, (int, float)):
        raise TimeValueError(
            f"times are RFC 3339 here, so durations need a unit like `24h` or `7d`, got `{_show(value)}`"
        )
    raise TimeValueError(f"expected a duration like `90m`, `24h` or `7d`, got `{_show(value)}`")


def format_time(value: float, kind: str) -> float | str:
    """A time for output, in the kind it was given.

    RFC 3339 output is clamped to ``0001-01-01T00:00:00Z`` .. ``9999-12-31T23:59:59Z`` (an
    expiry computed as a time plus a long duration can pass year 9999), infinities included;
    NaN is no time at all and comes back unchanged (parsing refuses it, so it does not arise).
    """
    if kind == RFC3339:
        if math.isnan(value):
            return value
        value = min(max(value, MIN_SECONDS), MAX_SECONDS)
        moment = datetime.fromtimestamp(value, tz=timezone.utc)
        return moment.isoformat().replace("+00:00", "Z")
    return value


def now_seconds() -> float:
    """The wall clock in whole seconds, rounded up: a memory written earlier in this second is
    never later than now (rounding down refused it as an input error)."""
    return float(math.ceil(datetime.now(tz=timezone.utc).timestamp()))


def _finite(value: int | float, what: str) -> float:
    """A number as a float; NaN, infinities and integers past the float range are refused."""
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise TimeValueError(f"expected a finite number as {what}, got `{_show(value)}`")
    return number
