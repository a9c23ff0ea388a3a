"""Differential tests against kio, an independent implementation of the Kafka protocol.

For every (api key, version, kind) kio has an entity class for, random kio entities
(hypothesis strategies over kio's own types) are serialised by kio and decoded by kdissect;
the result must equal the entity, field by field in schema order. Versions kio lacks get
random round trips here and hand-built byte examples in test_protocol_examples.py.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from kio.schema.heartbeat.v0.request import HeartbeatRequest as HeartbeatV0
from kio.schema.heartbeat.v4.request import HeartbeatRequest as HeartbeatV4
from kio.serial import entity_writer

from kdissect.decoders import api, compiler, schema
from kdissect.testing import encoder
from tests.kio_convert import (
    convert_message,
    kio_api_versions,
    kio_class,
    kio_entities,
    kio_non_api_entities,
    layout_differences,
)
from tests.strategies import message_values

pytestmark = pytest.mark.usefixtures("decoder_mode")  # native and pure-Python decoders alike

KIO = kio_api_versions()
_NO_SHRINK = (Phase.explicit, Phase.generate)  # failures are printed as found: shrinking kio entities is slow
OURS = schema.all_api_versions()

# The reference definitions (apache/kafka trunk, 4.5.0-SNAPSHOT) cover every (key, version, kind)
# kio 0.6.5 (Kafka 4.3) has, with the same layouts: no documented mismatch is left. A version kio
# has and the table lacks, or a layout that differs, fails the two tests below.
COMPARED = KIO
NOT_IN_KIO = [e for e in OURS if e not in set(KIO)]


def _kio_bytes(entity: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def test_kio_and_the_table_differ_only_where_documented() -> None:
    assert set(KIO) - set(OURS) == set()
    assert len(COMPARED) > 550
    # what kio lacks: versions Kafka 4.0 removed, the ZooKeeper-era APIs, and newer versions
    not_in_kio = set(NOT_IN_KIO)
    assert {(0, v, "request") for v in range(3)} <= not_in_kio
    assert {(1, v, "response") for v in range(4)} <= not_in_kio
    assert {k for k, _, _ in not_in_kio} >= {4, 5, 6, 7, 93}


def test_layouts_agree_on_every_version_kio_has() -> None:
    """Field lists, nesting and tags of every shared version, compared without random values."""
    found = {}
    for entry in KIO:
        diffs = layout_differences(kio_class(*entry), schema.api_message(*entry).root)
        if diffs:
            found[entry] = diffs
    assert found == {}


@pytest.mark.parametrize(("key", "version", "kind"), COMPARED)
def test_kdissect_decodes_what_kio_writes(key: int, version: int, kind: str) -> None:
    msg = schema.api_message(key, version, kind)

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), database=None, phases=_NO_SHRINK)
    @given(kio_entities(kio_class(key, version, kind)))
    def check(entity: object) -> None:
        raw = _kio_bytes(entity)
        decoded, end = api.decode_body(key, version, kind, raw)
        assert end == len(raw)
        assert decoded == convert_message(entity, msg)
        assert encoder.encode_message(msg, decoded) == raw  # and our encoder writes kio's bytes

    check()


@pytest.mark.parametrize(("name", "version", "cls"), kio_non_api_entities(), ids=lambda x: getattr(x, "__name__", x))
def test_headers_and_data_schemas_match_kio(name: str, version: int, cls: type) -> None:
    msg = schema.message(name, version)

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), database=None, phases=_NO_SHRINK)
    @given(kio_entities(cls))
    def check(entity: object) -> None:
        raw = _kio_bytes(entity)
        decoded, end = compiler.fast_decoder(msg)(raw, 0, len(raw))
        assert end == len(raw)
        assert decoded == convert_message(entity, msg)

    check()


def test_every_header_and_data_schema_kio_has_is_compared() -> None:
    names = {(n, v) for n, v, _ in kio_non_api_entities()}
    assert {("RequestHeader", 1), ("RequestHeader", 2), ("ResponseHeader", 0), ("ResponseHeader", 1)} <= names
    assert {("ConsumerProtocolSubscription", v) for v in range(4)} <= names
    assert len(names) == 21


@pytest.mark.parametrize(("key", "version", "kind"), NOT_IN_KIO)
def test_versions_kio_lacks_round_trip(key: int, version: int, kind: str) -> None:
    msg = schema.api_message(key, version, kind)

    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), database=None, phases=_NO_SHRINK)
    @given(message_values(msg))
    def check(value: dict) -> None:
        raw = encoder.encode_message(msg, value)
        decoded, end = api.decode_body(key, version, kind, raw)
        assert end == len(raw)
        assert encoder.encode_message(msg, decoded) == raw

    check()


def test_the_comparison_notices_a_wrong_value() -> None:
    """Guards the harness itself: a different entity, or the wrong schema version, must not compare equal."""
    entity = HeartbeatV4(group_id="g", generation_id=1, member_id="m", group_instance_id="i")
    msg = schema.api_message(12, 4, "request")
    decoded, _ = api.decode_body(12, 4, "request", _kio_bytes(entity))
    assert decoded == convert_message(entity, msg)
    other = HeartbeatV4(group_id="g", generation_id=2, member_id="m", group_instance_id="i")
    assert decoded != convert_message(other, msg)
    with pytest.raises(AssertionError, match="kio has fields"):
        convert_message(HeartbeatV0(group_id="g", generation_id=1, member_id="m"), msg)
