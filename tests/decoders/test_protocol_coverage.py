"""Every (api key, version, kind) in the schema table decodes, and round-trips random values."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.decoders import api, apis, compiler, schema
from kdissect.testing import encoder
from tests.strategies import message_values

pytestmark = pytest.mark.usefixtures("decoder_mode")  # native and pure-Python decoders alike

ALL = schema.all_api_versions()


def test_table_covers_every_api_key_ever_assigned() -> None:
    keys = {k for k, _, _ in ALL}
    assert keys == set(range(0, 95))  # 94: UnregisterController
    # removed ZooKeeper-era APIs ("none" in the newest definitions) are still decodable, from 3.9
    for key, name, newest in ((4, "LeaderAndIsr", 7), (5, "StopReplica", 4), (6, "UpdateMetadata", 8)):
        assert apis.name_of(key) == name
        assert apis.version_range(key, "request") == (0, newest)
    assert apis.version_range(7, "request") == (0, 3)  # ControlledShutdown
    # newer than kio (trunk after 4.3.1)
    assert apis.version_range(18, "request") == (0, 5)  # ApiVersions
    assert apis.version_range(28, "request") == (0, 6)  # TxnOffsetCommit
    assert apis.version_range(42, "request") == (0, 3)  # DeleteGroups
    # versions only unmerged drafts had are gone
    assert apis.version_range(47, "request") == (0, 0)  # OffsetDelete
    assert apis.version_range(62, "request") == (0, 4)  # BrokerRegistration
    assert apis.version_range(72, "response") == (0, 0)  # PushTelemetry
    # versions Kafka 4.0 removed come from the 3.9 definitions
    assert apis.version_range(0, "request") == (0, 13)
    assert apis.version_range(1, "response") == (0, 18)
    assert len(ALL) > 700


@pytest.mark.parametrize(("key", "version", "kind"), ALL)
def test_every_table_entry_has_a_decoder(key: int, version: int, kind: str) -> None:
    msg = schema.api_message(key, version, kind)
    decode = compiler.fast_decoder(msg)
    raw = encoder.encode_message(msg, {})
    value, end = decode(raw, 0, len(raw))
    assert end == len(raw)
    assert encoder.encode_message(msg, value) == raw


@settings(max_examples=len(ALL) * 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_values_round_trip_through_encoder_and_decoder(data: st.DataObject) -> None:
    key, version, kind = data.draw(st.sampled_from(ALL))
    msg = schema.api_message(key, version, kind)
    value = data.draw(message_values(msg))
    raw = encoder.encode_message(msg, value)
    decoded, end = api.decode_body(key, version, kind, raw)
    assert end == len(raw)
    assert encoder.encode_message(msg, decoded) == raw
    assert api.decode_body(key, version, kind, encoder.encode_message(msg, decoded))[0] == decoded


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_truncated_messages_raise_decode_error_with_a_path(data: st.DataObject) -> None:
    key, version, kind = data.draw(st.sampled_from(ALL))
    msg = schema.api_message(key, version, kind)
    raw = encoder.encode_message(msg, data.draw(message_values(msg)))
    if not raw:
        return
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        api.decode_body(key, version, kind, raw[:cut])
    except api.DecodeError as e:
        assert e.offset is not None and 0 <= e.offset <= cut
        assert e.api_key == key
    # A prefix can itself be a valid (shorter) message, e.g. when arrays end early: that is fine.


@pytest.mark.parametrize(
    ("key", "version", "kind", "expected"),
    [
        (7, 0, "request", 0),  # ControlledShutdown v0: header without client id
        (7, 1, "request", 1),
        (7, 3, "request", 2),
        (0, 8, "request", 1),
        (0, 9, "request", 2),
        (0, 9, "response", 1),
        (18, 3, "request", 2),
        (18, 0, "response", 0),
        (18, 3, "response", 0),  # ApiVersions responses always use header v0
        (18, 4, "response", 0),
        (3, 9, "response", 1),
        (3, 8, "response", 0),
    ],
)
def test_header_versions_follow_kafka(key: int, version: int, kind: str, expected: int) -> None:
    assert schema.api_message(key, version, kind).header_version == expected


def test_embedded_consumer_protocol_data_decodes() -> None:
    value = {"topics": ["a", "b"], "user_data": None, "owned_partitions": [{"topic": "a", "partitions": [0, 1]}]}
    raw = encoder.encode_data("ConsumerProtocolSubscription", 1, value)
    assert raw[:2] == b"\x00\x01"
    out = api.decode_data("ConsumerProtocolSubscription", raw)
    assert out == {"version": 1, "data": value}
