"""Times and durations: impossible RFC 3339 times, non-ASCII digits and absurd sizes are one
TimeValueError naming the value (never a ValueError or OverflowError from datetime), and the
records and `--now` paths turn it into one located line."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memsolve
from memsolve.timeutil import (
    NUMBER,
    RFC3339,
    TimeValueError,
    format_time,
    parse_duration,
    parse_timestamp,
    time_kind,
)

from .conftest import write

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _refused(value: object, *fragments: str) -> str:
    with pytest.raises(TimeValueError) as caught:
        parse_timestamp(value)
    message = str(caught.value)
    assert "\n" not in message and not message.endswith(".") and message[0].islower()
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.mark.parametrize("value, reason", [
    ("2026-13-01T00:00:00Z", "month 13 does not exist"),
    ("2026-00-10T00:00:00Z", "month 00 does not exist"),
    ("2026-02-30T00:00:00Z", "day 30 does not exist in February 2026"),
    ("2025-02-29T00:00:00Z", "day 29 does not exist in February 2025"),  # not a leap year
    ("2100-02-29T00:00:00Z", "day 29 does not exist in February 2100"),  # nor is 2100
    ("2026-04-31T00:00:00Z", "day 31 does not exist in April 2026"),
    ("2026-01-00T00:00:00Z", "day 00 does not exist"),
    ("2026-01-01T24:00:00Z", "hour 24 does not exist"),
    ("2026-01-01T99:00:00Z", "hour 99 does not exist"),
    ("2026-01-01T23:60:00Z", "minute 60 does not exist"),
    ("2026-01-01T23:59:61Z", "second 61 does not exist"),
    ("2026-01-01T00:00:00+24:00", "offset `+24:00` is out of range"),
    ("2026-01-01T00:00:00+23:60", "offset `+23:60` is out of range"),
    ("2026-01-01T00:00:00+05:60", "offset `+05:60` is out of range"),  # fromisoformat would read +06:00
    ("2026-01-01T00:00:00-99:99", "offset `-99:99` is out of range"),
    ("0000-01-01T00:00:00Z", "year 0000 does not exist"),
    ("0001-01-01T00:00:00+01:00", "before 0001-01-01T00:00:00Z"),
    ("0001-01-01T00:59:59.999999+01:00", "before 0001-01-01T00:00:00Z"),
    ("9999-12-31T23:59:59-01:00", "after 9999-12-31T23:59:59Z"),
    ("9999-12-31T23:59:30-00:01", "after 9999-12-31T23:59:59Z"),
])
def test_impossible_times_name_the_value_and_the_field(value: str, reason: str) -> None:
    _refused(value, f"`{value}`", reason)
    assert time_kind(value) == RFC3339  # the shape decides the kind; parsing says what is wrong


@pytest.mark.parametrize("value", ["2016-12-31T23:59:60Z", "2026-06-30T23:59:60.5+00:00"])
def test_leap_seconds_are_refused_with_a_clear_message(value: str) -> None:
    _refused(value, "leap second", "use `:59`")


@pytest.mark.parametrize("value", [
    "٢٠٢٦-١١-٣٠T09:00:00Z",  # Arabic-Indic digits: Python's \d matches them
    "２０２６-11-30T09:00:00Z",  # fullwidth
    "2026-11-30T०९:00:00Z",  # Devanagari hour
    "2026-11-30T09:00:00.١Z",  # in the fraction
    "2026-11-30T09:00:00+٠٥:٠٠",  # in the offset
])
def test_non_ascii_digits_are_refused(value: str) -> None:
    assert time_kind(value) is None
    _refused(value, "digits other than ASCII 0-9", f"`{value}`")


@pytest.mark.parametrize("value, expected", [
    ("2024-02-29T00:00:00Z", datetime(2024, 2, 29, tzinfo=timezone.utc)),
    ("2000-02-29T12:00:00Z", datetime(2000, 2, 29, 12, tzinfo=timezone.utc)),
    ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=timezone.utc)),
    ("0001-01-01T00:00:00-01:00", datetime(1, 1, 1, 1, tzinfo=timezone.utc)),
    ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)),
    ("9999-12-31T23:59:59+23:59", datetime(9999, 12, 31, 0, 0, 59, tzinfo=timezone.utc)),
    ("2026-11-30t09:00:00z", datetime(2026, 11, 30, 9, tzinfo=timezone.utc)),
    ("2026-11-30 09:00:00-05:30", datetime(2026, 11, 30, 14, 30, tzinfo=timezone.utc)),
    ("  2026-11-30T09:00:00.25Z\n", datetime(2026, 11, 30, 9, 0, 0, 250000, tzinfo=timezone.utc)),
    ("2026-11-30T09:00:00.1234567891234Z", datetime(2026, 11, 30, 9, 0, 0, 123456, tzinfo=timezone.utc)),
])
def test_real_times_at_the_edges_still_parse(value: str, expected: datetime) -> None:
    assert time_kind(value) == RFC3339
    assert parse_timestamp(value) == (expected - EPOCH).total_seconds()


def test_yaml_datetimes_are_checked_like_strings() -> None:
    plus_one = timezone(timedelta(hours=1))
    assert parse_timestamp(datetime(2026, 1, 1, tzinfo=plus_one)) == (
        datetime(2025, 12, 31, 23, tzinfo=timezone.utc) - EPOCH
    ).total_seconds()
    _refused(datetime(1, 1, 1, tzinfo=plus_one), "before 0001-01-01T00:00:00Z")
    _refused(datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-2))), "after 9999-12-31T23:59:59Z")
    _refused(datetime(2026, 1, 1), "has no timezone")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400, -(10**400)])
def test_numbers_that_are_no_time(value: float) -> None:
    assert time_kind(value) == NUMBER
    message = _refused(value, "expected a finite number")
    assert len(message) < 120  # 10**400 is cut, not printed whole


def test_messages_cut_long_values_to_40_characters() -> None:
    long = "x" * 10_000
    message = _refused(long)
    assert f"`{'x' * 37}...`" in message and len(message) < 150
    message = _refused("2026-01-01T00:00:00." + "1" * 5000 + "+24:00")
    assert "`2026-01-01T00:00:00.11111111111111111...`" in message
    with pytest.raises(TimeValueError, match=r"`9{37}\.\.\.`"):
        parse_duration("9" * 500 + "h", RFC3339)


@given(st.text(alphabet="0123456789", min_size=14, max_size=14), st.sampled_from(["Z", "+", "-"]),
       st.text(alphabet="0123456789", min_size=4, max_size=4))
@settings(max_examples=400, deadline=None)
def test_any_ascii_shaped_time_parses_or_is_one_time_error(digits: str, sign: str, offset: str) -> None:
    d = digits
    zone = "Z" if sign == "Z" else f"{sign}{offset[:2]}:{offset[2:]}"
    value = f"{d[:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}{zone}"
    try:
        seconds = parse_timestamp(value)
    except TimeValueError as error:  # nothing else: no ValueError, no OverflowError
        assert "\n" not in str(error) and value in str(error)
        return
    # a time it accepts is a real instant: it formats and reads back to the same one
    assert parse_timestamp(format_time(seconds, RFC3339)) == seconds
    assert datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() == seconds


@pytest.mark.parametrize("value, reason", [
    ("٢٤h", "digits other than ASCII 0-9"),
    ("２4h", "digits other than ASCII 0-9"),
    ("1.٥h", "digits other than ASCII 0-9"),
    ("9" * 400 + "h", "longer than the 9,999 years"),  # float() gives inf
    ("600000w", "longer than the 9,999 years"),
    ("1e400h", "expected a duration like"),
    ("24h\u00a0", "expected a duration like"),  # a non-ASCII space is not padding
])
def test_durations_refused(value: str, reason: str) -> None:
    with pytest.raises(TimeValueError, match=reason) as caught:
        parse_duration(value, RFC3339)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("value", [math.inf, math.nan, 10**400])
def test_number_durations_must_be_finite(value: float) -> None:
    with pytest.raises(TimeValueError, match="finite number"):
        parse_duration(value, NUMBER)


def test_durations_that_still_work() -> None:
    assert parse_duration(" 90m ", RFC3339) == 5400
    assert parse_duration("1.5h", RFC3339) == 5400
    assert parse_duration("500000w", RFC3339) == 500000 * 604800  # 9,589 years: within the span
    assert parse_duration(48, NUMBER) == 48.0


@pytest.mark.parametrize("value, expected", [
    (1e300, "9999-12-31T23:59:59Z"),
    (math.inf, "9999-12-31T23:59:59Z"),
    (253402300800.0, "9999-12-31T23:59:59Z"),  # 10000-01-01: one second too far
    (-1e300, "0001-01-01T00:00:00Z"),
    (-math.inf, "0001-01-01T00:00:00Z"),
    (0.0, "1970-01-01T00:00:00Z"),
])
def test_format_time_clamps_to_the_rfc3339_range(value: float, expected: str) -> None:
    assert format_time(value, RFC3339) == expected


def test_format_time_leaves_nan_and_numbers_alone() -> None:
    assert math.isnan(format_time(math.nan, RFC3339))
    assert format_time(1e300, NUMBER) == 1e300


# --- end to end: records file and --now ---------------------------------------------------

POLICY = """apiVersion: memsolve/v1
kind: MemoryPolicy
metadata: {name: times}
tenant: team-a
budget: {tokens: 100}
on_invalid_record: %s
rules:
  - max_age: 720h
  - freshness: {default_ttl: 48h}
"""

BAD_TIMES = [
    "2026-13-01T00:00:00Z",
    "2026-02-30T09:00:00Z",
    "2026-11-30T24:00:00Z",
    "2026-11-30T09:60:00Z",
    "2026-11-30T23:59:60Z",
    "2026-11-30T09:00:00+24:00",
    "0000-11-30T09:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "٢٠٢٦-١١-٣٠T09:00:00Z",
]


def _records(tmp_path: Path, stamp: str) -> Path:
    good = {"id": "a", "tenant": "team-a", "timestamp": "2026-11-30T09:00:00Z", "tokens": 5, "utility": 1}
    bad = {**good, "id": "b", "timestamp": stamp}
    return write(tmp_path, "r.jsonl", json.dumps(good) + "\n" + json.dumps(bad, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("stamp", BAD_TIMES)
def test_cli_bad_timestamp_fails_at_its_record(cli, tmp_path: Path, stamp: str) -> None:
    policy = write(tmp_path, "p.yaml", POLICY % "error")
    records = _records(tmp_path, stamp)
    result = cli("--policy", policy, "--records", records, "--now", "2026-12-01T00:00:00Z")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {records}:2:") and "[1].timestamp:" in result.stderr
    assert f"`{stamp}`" in result.stderr


@pytest.mark.parametrize("stamp", BAD_TIMES)
def test_cli_bad_timestamp_is_excluded_as_invalid(cli, tmp_path: Path, stamp: str) -> None:
    policy = write(tmp_path, "p.yaml", POLICY % "exclude")
    records = _records(tmp_path, stamp)
    result = cli("--policy", policy, "--records", records, "--now", "2026-12-01T00:00:00Z", "--format", "json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert [s["id"] for s in out["selected"]] == ["a"]
    [excluded] = out["excluded"]
    assert excluded["id"] == "b" and excluded["rule"] == "invalid" and f"`{stamp}`" in excluded["reason"]


def test_cli_bad_unquoted_yaml_timestamp_is_excluded_with_the_reason(cli, tmp_path: Path) -> None:
    # YAML reads an unquoted timestamp itself; one it cannot build (month 13) stays text, not a traceback
    policy = write(tmp_path, "p.yaml", POLICY % "exclude")
    records = write(tmp_path, "r.yaml", '- {id: a, tenant: team-a, timestamp: "2026-11-30T09:00:00Z", tokens: 5}\n'
                                        "- {id: b, tenant: team-a, timestamp: 2026-13-01T09:00:00Z, tokens: 5}\n"
                                        "- {id: c, tenant: team-a, timestamp: 2026-11-30T23:59:60Z, tokens: 5}\n")
    result = cli("--policy", policy, "--records", records, "--now", "2026-12-01T00:00:00Z", "--format", "json")
    assert result.exit_code == 0, result.stderr
    reasons = {e["id"]: e["reason"] for e in json.loads(result.stdout)["excluded"]}
    assert "month 13 does not exist" in reasons["b"] and "leap second" in reasons["c"]


@pytest.mark.parametrize("now, reason", [
    ("2026-13-01T00:00:00Z", "month 13 does not exist"),
    ("2026-12-01T23:59:60Z", "leap second"),
    ("9999-12-31T23:59:59-01:00", "after 9999-12-31T23:59:59Z"),
])
def test_cli_bad_now_is_one_line(cli, tmp_path: Path, now: str, reason: str) -> None:
    policy = write(tmp_path, "p.yaml", POLICY % "error")
    records = _records(tmp_path, "2026-11-30T10:00:00Z")
    result = cli("--policy", policy, "--records", records, "--now", now)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ") and reason in result.stderr and "Traceback" not in result.stderr


def test_cli_bad_now_with_the_team_a_policy_is_one_line(cli) -> None:
    result = cli("--policy", "policies/team-a.yaml", "--now", "2026-13-01T00:00:00Z")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")


def test_load_records_marks_the_bad_record_at_its_line(tmp_path: Path) -> None:
    records = memsolve.load_records(_records(tmp_path, "2026-02-30T09:00:00Z"))
    [bad] = records.invalid
    assert (bad.error.line, bad.error.path) == (2, "[1].timestamp")
    assert "day 30 does not exist in February 2026" in bad.error.message


def test_the_default_now_is_never_before_a_memory_written_this_second() -> None:
    """Without a `now`, RFC 3339 records are judged at the wall clock in whole seconds, rounded
    up: a record stamped a moment ago (within the same second) is admitted."""
    from datetime import datetime, timezone

    import memsolve

    from .conftest import make_policy

    stamp = datetime.now(tz=timezone.utc).isoformat().replace("+00:00", "Z")
    records = memsolve.load_records([{"id": "just-now", "timestamp": stamp, "tokens": 1, "utility": 1}])
    result = memsolve.solve(make_policy("budget: {tokens: 5}\n"), records)
    assert [c.id for c in result.selected] == ["just-now"]
