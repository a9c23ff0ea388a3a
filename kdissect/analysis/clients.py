"""Who is talking to the cluster: client software, the API versions each client uses, and which of
those versions the newest Kafka no longer accepts (``removed``: the schema table knows,
:func:`kdissect.decoders.apis.removed_version`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kdissect.analysis.cells import given

if TYPE_CHECKING:
    import pandas as pd


Removed = Callable[[int, int], bool]  # (api key, version) -> no longer accepted


def _versions(rows: pd.DataFrame, removed_version: Removed) -> tuple[str, str]:
    used = rows.dropna(subset=["api_key", "api_version"]).drop_duplicates(["api_name", "api_version"])
    used = used.sort_values(["api_key", "api_version"])
    names = [f"{a} v{v}" for a, v in zip(used["api_name"], used["api_version"], strict=True)]
    removed = [
        f"{a} v{v}"
        for a, k, v in zip(used["api_name"], used["api_key"], used["api_version"], strict=True)
        if removed_version(int(k), int(v))
    ]
    return ", ".join(names), ", ".join(removed)


def inventory(tables: Mapping[str, pd.DataFrame], removed: Removed) -> pd.DataFrame:
    """One row per client id (and host): software name/version (ApiVersions v3+), connections, requests,
    API versions used, and those Kafka 4.0 or later removed (``removed_versions``)."""
    import pandas as pd

    ex = tables["exchanges"]
    conns = tables["connections"]
    software = conns[conns["is_kafka"].fillna(False).astype(bool)][
        ["connection_id", "software_name", "software_version"]
    ]
    ex = ex.merge(software, on="connection_id", how="left")
    columns = ["client_id", "client_ip", "software", "connections", "requests", "api_versions", "removed_versions"]
    rows = []
    for (client, ip), g in ex.groupby(["client_id", "client_ip"], observed=True, dropna=False):
        names = g.dropna(subset=["software_name"]).drop_duplicates(["software_name", "software_version"])
        soft = ", ".join(
            f"{n} {v}" if given(v) else str(n)
            for n, v in zip(names["software_name"], names["software_version"], strict=True)
        )
        used, gone = _versions(g, removed)
        rows.append((client, ip, soft or None, g["connection_id"].nunique(), len(g), used, gone or None))
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values("requests", ascending=False).reset_index(drop=True)
