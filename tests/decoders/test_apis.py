"""The API registry agrees with the schema table it is read from, and names the facts others need."""

from __future__ import annotations

from kdissect.decoders import apis, schema


def test_every_api_of_the_table_with_its_versions_and_header_versions() -> None:
    reg = apis.registry()
    assert {k for k, _, _ in schema.all_api_versions()} == set(reg)
    for key, version, kind in schema.all_api_versions():
        lo, hi = reg[key].versions[kind]
        assert lo <= version <= hi
        assert apis.header_version(key, version, kind) == (schema.api_message(key, version, kind).header_version or 0)


def test_names_and_keys() -> None:
    assert [apis.key_of(n) for n in ("Produce", "Fetch", "Metadata", "SaslHandshake", "ApiVersions")] == [
        0,
        1,
        3,
        17,
        18,
    ]
    assert apis.name_of(0) == "Produce" and apis.name_of(9999) == "Unknown(9999)" and apis.name_of(None) is None
    assert apis.version_range(9999, "request") is None


def test_flags() -> None:
    assert apis.keys_with(apis.SILENT_IF_ACKS0) == {apis.key_of("Produce")}
    cluster = {apis.key_of(n) for n in ("Metadata", "LeaderAndIsr", "UpdateMetadata", "DescribeTopicPartitions")}
    assert apis.keys_with(apis.CLUSTER_STATE) == cluster
