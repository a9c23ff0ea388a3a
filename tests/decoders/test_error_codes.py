"""The Kafka error-code table: spot checks, shape, unknown codes, and differential checks.

The table was verified by hand against Kafka's ``Errors`` enum and the superclass chain of each
exception it maps to; kafka-python and kio are independent transcriptions, so comparing with them
catches typos and shifted rows. Every place we knowingly disagree is listed below with the reason.
"""

from __future__ import annotations

import json
import re
from importlib import resources

import kafka.errors
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kdissect.decoders.error_codes import ERROR_CODES, error_name, is_retriable

# Highest code verified against Kafka trunk (CONTROLLER_ID_NOT_REGISTERED); raise it with the JSON.
LATEST_CODE = 136

# Names kafka-python spells differently from Kafka's enum (old Kafka names or its own choices).
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",  # Kafka renamed UNKNOWN to UNKNOWN_SERVER_ERROR
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",  # Kafka's name before NOT_LEADER_OR_FOLLOWER
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}
# kafka-python marks CORRUPT_MESSAGE non-retriable, but Kafka's CorruptRecordException
# extends RetriableException, so Kafka's protocol docs list it as retriable.
KAFKA_PYTHON_RETRIABLE = {2: False}


def _normalise(name: str) -> str:
    return name.upper().replace("_", "")


def _kafka_python_errors() -> dict[int, type[kafka.errors.BrokerResponseError]]:
    return {code: cls for code, cls in kafka.errors.kafka_errors.items() if code is not None}


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        # OffsetOutOfRangeException extends InvalidOffsetException, which extends ApiException.
        (1, "OFFSET_OUT_OF_RANGE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (15, "COORDINATOR_NOT_AVAILABLE", True),
        (16, "NOT_COORDINATOR", True),
        (27, "REBALANCE_IN_PROGRESS", False),
        (35, "UNSUPPORTED_VERSION", False),
        (41, "NOT_CONTROLLER", True),
        (89, "THROTTLING_QUOTA_EXCEEDED", True),
        (133, "SHARE_SESSION_LIMIT_REACHED", True),
        (136, "CONTROLLER_ID_NOT_REGISTERED", False),
    ],
)
def test_known_codes(code: int, name: str, retriable: bool) -> None:
    assert error_name(code) == name
    assert is_retriable(code) is retriable
    assert ERROR_CODES[code] == (name, retriable)


def test_codes_are_contiguous_from_minus_one() -> None:
    codes = sorted(ERROR_CODES)
    assert codes[0] == -1
    assert codes[-1] == LATEST_CODE
    assert codes == list(range(-1, codes[-1] + 1))


def test_names_are_unique_enum_identifiers() -> None:
    names = [name for name, _ in ERROR_CODES.values()]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", name) for name in names)


def test_json_rows_hold_only_code_name_retriable() -> None:
    text = resources.files("kdissect.decoders").joinpath("error_codes.json").read_text("utf-8")
    rows = json.loads(text)
    assert all(set(row) == {"code", "name", "retriable"} for row in rows)
    assert all(type(row["code"]) is int and type(row["retriable"]) is bool for row in rows)
    assert len(rows) == len(ERROR_CODES)


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        ERROR_CODES[0] = ("X", True)  # type: ignore[index]


@given(st.integers(min_value=-(2**15), max_value=2**15 - 1).filter(lambda c: c not in ERROR_CODES))
def test_unknown_codes_stay_visible(code: int) -> None:
    assert error_name(code) == f"UNKNOWN_ERROR_CODE_{code}"
    assert is_retriable(code) is None


@given(st.sampled_from(sorted(ERROR_CODES)))
def test_lookups_agree_with_table(code: int) -> None:
    assert (error_name(code), is_retriable(code)) == ERROR_CODES[code]


def test_matches_kafka_python_except_listed_differences() -> None:
    for code, cls in _kafka_python_errors().items():
        name, retriable = ERROR_CODES[code]
        expected_name = KAFKA_PYTHON_NAMES.get(code, name)
        assert _normalise(cls.message) == _normalise(expected_name), code
        assert cls.retriable is KAFKA_PYTHON_RETRIABLE.get(code, retriable), code


def test_listed_kafka_python_differences_are_real() -> None:
    """A stale exception would hide a future regression, so each one must still differ."""
    theirs = _kafka_python_errors()
    for code in KAFKA_PYTHON_NAMES:
        assert _normalise(theirs[code].message) != _normalise(ERROR_CODES[code][0]), code
    for code in KAFKA_PYTHON_RETRIABLE:
        assert theirs[code].retriable is not ERROR_CODES[code][1], code


def test_matches_kio_exactly() -> None:
    assert len(ErrorCode) > 100
    for member in ErrorCode:
        assert ERROR_CODES[member.value] == (member.name.upper(), member.retriable), member
