"""One registry of Kafka's API keys, read from the schema table (like Kafka's ``ApiKeys``).

Each API's key, name, version ranges and header versions come from the table; the few facts no
schema states (a Produce with acks=0 gets no answer; some responses list the whole cluster's
partitions) are flags set here by API name. Other modules name APIs through this module,
never by number.
"""

from __future__ import annotations

from functools import cache

from kdissect.dataclass import dataclass
from kdissect.decoders import schema

# Flags: behaviours of an API that its schema does not state.
SILENT_IF_ACKS0 = "silent_if_acks0"  # a request whose ``acks`` is 0 gets no response
CLUSTER_STATE = "cluster_state"  # lists every partition of the cluster: not per-partition traffic
_FLAGS: dict[str, frozenset[str]] = {
    "Produce": frozenset({SILENT_IF_ACKS0}),
    "Metadata": frozenset({CLUSTER_STATE}),
    "LeaderAndIsr": frozenset({CLUSTER_STATE}),
    "UpdateMetadata": frozenset({CLUSTER_STATE}),
    "DescribeTopicPartitions": frozenset({CLUSTER_STATE}),
}


@dataclass(frozen=True, slots=True)
class Api:
    """One API key as the schema table describes it."""

    key: int
    name: str  # "Produce", "Fetch", ...
    versions: dict[str, tuple[int, int]]  # "request"/"response" -> (lowest, highest) version
    header_versions: dict[str, dict[int, int]]  # "request"/"response" -> api version -> header version
    flags: frozenset[str]
    current: tuple[int, int] | None = None  # request versions the newest Kafka still accepts (None: none)


@cache
def registry() -> dict[int, Api]:
    """Every API key of the schema table (read once, on first use: ``import kdissect`` stays light)."""
    found: dict[int, dict] = {}
    for name, entry in schema.table().items():
        if "api_key" not in entry:
            continue
        api = found.setdefault(entry["api_key"], {"versions": {}, "headers": {}})
        kind = entry["type"]
        api["versions"][kind] = tuple(entry["versions"])
        api["headers"][kind] = {int(v): h for v, h in entry.get("header", {}).items()}
        if kind == "request":
            api["name"] = name[: -len("Request")]
            api["current"] = tuple(entry["current"]) if entry.get("current") else None
    return {
        key: Api(key, a["name"], a["versions"], a["headers"], _FLAGS.get(a["name"], frozenset()), a.get("current"))
        for key, a in sorted(found.items())
    }


@cache
def key_of(name: str) -> int:
    """The api key of an API name (``key_of("Produce") == 0``)."""
    for api in registry().values():
        if api.name == name:
            return api.key
    raise LookupError(f"no API named {name!r} in the schema table")


def name_of(key: int | None) -> str | None:
    """The API's name, ``Unknown(<key>)`` for a key the table does not know, None for None."""
    if key is None:
        return None
    api = registry().get(key)
    return api.name if api is not None else f"Unknown({key})"


def version_range(key: int, kind: str) -> tuple[int, int] | None:
    """The (lowest, highest) version of an API's requests or responses, None when unknown."""
    api = registry().get(key)
    return None if api is None else api.versions.get(kind)


def removed_version(key: int, version: int) -> bool:
    """Whether the newest Kafka no longer accepts this request version (Kafka 4.0 removed many old
    ones); False for an API or version the table does not know."""
    api = registry().get(key)
    known = None if api is None else api.versions.get("request")
    if known is None or not known[0] <= version <= known[1]:
        return False
    return api.current is None or not api.current[0] <= version <= api.current[1]  # type: ignore[union-attr]


def header_version(key: int, version: int, kind: str) -> int:
    """The request or response header version an API version uses (0 when the table says none)."""
    api = registry().get(key)
    return 0 if api is None else api.header_versions.get(kind, {}).get(version, 0)


@cache
def keys_with(flag: str) -> frozenset[int]:
    """The api keys carrying ``flag`` (for per-message tests that must stay cheap)."""
    return frozenset(api.key for api in registry().values() if flag in api.flags)
