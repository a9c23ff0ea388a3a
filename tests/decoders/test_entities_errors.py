"""``has_error`` (the exchanges-only shortcut) agrees with the full schema walk on every response schema."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.decoders import apis, schema
from kdissect.decoders.entities import has_error, walk
from kdissect.tables.sink import response_errors
from tests.strategies import message_values

_RESPONSES = sorted(
    (key, version)
    for key in apis.registry()
    if (rng := apis.version_range(key, "response")) is not None
    for version in range(rng[0], rng[1] + 1)
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_has_error_says_what_the_walk_finds(data: st.DataObject) -> None:
    key, version = data.draw(st.sampled_from(_RESPONSES))
    msg = schema.api_message(key, version, "response")
    body = data.draw(message_values(msg))
    found = response_errors(list(walk(msg, body, errors_only=True)))
    assert has_error(msg, body) == bool(found)


def test_a_nested_error_is_found_and_all_zero_is_not() -> None:
    msg = schema.api_message(0, 9, "response")  # Produce: responses[].partition_responses[].error_code
    part = {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": 0,
            "record_errors": [], "error_message": None}
    body = {"responses": [{"name": "t", "partition_responses": [dict(part), dict(part)]}], "throttle_time_ms": 0}
    assert not has_error(msg, body)
    body["responses"][0]["partition_responses"][1]["error_code"] = 6
    assert has_error(msg, body)
