"""Who is talking to the cluster: client software, the API versions each client uses, and which of
those versions the newest Kafka no longer accepts (``removed``: the schema table knows,
:func:`kdissect.decoders.apis.removed_version`).

Built from whole columns, never a pandas step per client: a capture of a fleet has hundreds of
thousands of (client id, host) pairs, and a per-group step cost minutes there (bench/bench_inventory.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


Removed = Callable[[int, int], bool]  # (api key, version) -> no longer accepted
KEY = ["client_id", "client_ip"]
COLUMNS = ["client_id", "client_ip", "software", "connections", "requests", "api_versions", "removed_versions"]


def _joined(groups: Iterable[int], texts: Iterable[str], n: int) -> list[str]:
    """Per group 0..n-1, its texts joined with ", " in the order given (one pass over the rows)."""
    parts: list[list[str]] = [[] for _ in range(n)]
    for group, text in zip(groups, texts, strict=True):
        parts[group].append(text)
    return [", ".join(p) for p in parts]


def _software(ex: pd.DataFrame, n: int) -> list[str]:
    """Per group, its distinct ``name version`` pairs in the order first seen."""
    named = ex[ex["software_name"].notna()].drop_duplicates(["group", "software_name", "software_version"])
    versions = named["software_version"].astype(object)
    texts = named["software_name"].astype(str) + (" " + versions.astype(str)).where(versions.notna(), "")
    return _joined(named["group"].tolist(), texts.tolist(), n)


def _versions(ex: pd.DataFrame, removed: Removed, n: int) -> tuple[list[str], list[str]]:
    """Per group, the API versions used (by API key, then version) and those Kafka removed."""
    used = ex.dropna(subset=["api_key", "api_version"]).drop_duplicates(["group", "api_name", "api_version"])
    used = used.sort_values(["group", "api_key", "api_version"], kind="stable")
    names = used["api_name"].astype("string").fillna("?")  # an API without a name: "?"
    texts = (names + " v" + used["api_version"].astype("int64").astype(str)).tolist()
    pairs = list(zip(used["api_key"].astype("int64").tolist(), used["api_version"].astype("int64").tolist(),
                     strict=True))  # fmt: skip
    gone_of = {pair: removed(*pair) for pair in set(pairs)}  # a few hundred distinct (key, version) at most
    groups = used["group"].tolist()
    gone = [(g, t) for g, t, pair in zip(groups, texts, pairs, strict=True) if gone_of[pair]]
    return _joined(groups, texts, n), _joined((g for g, _ in gone), (t for _, t in gone), n)


def inventory(tables: Mapping[str, pd.DataFrame], removed: Removed) -> pd.DataFrame:
    """One row per client id (and host): software name/version (ApiVersions v3+), connections, requests,
    API versions used, and those Kafka 4.0 or later removed (``removed_versions``)."""
    import pandas as pd

    ex = tables["exchanges"]
    if ex.empty:
        return pd.DataFrame(columns=COLUMNS)
    conns = tables["connections"]
    software = conns[conns["is_kafka"].fillna(False).astype(bool)][
        ["connection_id", "software_name", "software_version"]
    ].drop_duplicates("connection_id")
    ex = ex[[*KEY, "connection_id", "api_key", "api_name", "api_version"]].merge(
        software, on="connection_id", how="left"
    )
    grouped = ex.groupby(KEY, observed=True, dropna=False, sort=True)
    ex["group"] = grouped.ngroup()
    counts = grouped.agg(connections=("connection_id", "nunique"), requests=("connection_id", "size")).reset_index()
    n = len(counts)
    used, gone = _versions(ex, removed, n)
    out = counts.assign(software=_software(ex, n), api_versions=used, removed_versions=gone)
    out["software"] = out["software"].where(out["software"] != "", None)
    out["removed_versions"] = out["removed_versions"].where(out["removed_versions"] != "", None)
    return out.sort_values("requests", ascending=False, kind="stable").reset_index(drop=True)[COLUMNS]
