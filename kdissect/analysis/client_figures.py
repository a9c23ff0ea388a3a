"""The client inventory (:func:`kdissect.analysis.clients.inventory`) as a mergeable value fed by the
run's pieces of ``exchanges`` and ``connections``, so the report never holds a fleet's connection rows.

Per (client id, client address): requests, API versions used, and, once a connection's row comes,
that connection counted once with its software. A connection's row is made when it closes, after
its exchanges; a run may hand the row over before the last piece of its exchanges, but never after
the next one, so a row whose exchanges have not come waits for that one piece only. State beyond
the keys is thus the open connections (their keys) and the rows waiting, bounded by
:data:`~kdissect.analysis.bounded.KEY_LIMIT` keys (the rest in one ``(other)`` row); the software
names and API versions kept per key are capped too.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kdissect.analysis.bounded import KEY_LIMIT, OTHER, Groups
from kdissect.analysis.clients import COLUMNS, Removed
from kdissect.analysis.slot_state import SlotState
from kdissect.tables.columns import cells
from kdissect.tables.sink import Columns

if TYPE_CHECKING:
    import pandas as pd

SOFTWARE_LIMIT = 32  # software names kept per client (the rest are not listed)
VERSIONS_LIMIT = 1024  # (API, version) pairs kept per client: more than the schema has


class Client(SlotState):
    """One key's figures: connections, requests, software (first seen first) and API versions used."""

    __slots__ = ("connections", "requests", "software", "versions")

    def __init__(self) -> None:
        self.connections = self.requests = 0
        self.software: dict[tuple[str, str | None], object] = {}  # (name, version) -> first request time seen
        self.versions: dict[tuple[int, int], str | None] = {}  # (api key, version) -> API name

    def merge(self, other: Client) -> None:
        self.connections += other.connections
        self.requests += other.requests
        for software, first in other.software.items():
            self.see_software(software, first)
        for pair, name in other.versions.items():
            if pair in self.versions or len(self.versions) < VERSIONS_LIMIT:
                self.versions.setdefault(pair, name)

    def see_software(self, software: tuple[str, str | None], first: object) -> None:
        seen = self.software.get(software)
        if seen is None and len(self.software) >= SOFTWARE_LIMIT:
            return
        if seen is None or (first is not None and first < seen):  # type: ignore[operator]
            self.software[software] = first


class ClientFigures:
    """Clients keyed by (client id, client address), bounded; see the module's doc."""

    def __init__(self, limit: int = KEY_LIMIT) -> None:
        self.clients: Groups[Client] = Groups(Client, limit)
        self._open: dict[int, dict[Hashable, object]] = {}  # connection id -> its keys, first request time each
        self._closed: dict[int, tuple[object, object, object, set]] = {}  # rows before their exchanges' last piece

    def add_exchanges(self, ex: Columns) -> None:
        """A piece's exchanges, grouped first by what tells them apart here (a piece has few
        distinct combinations): requests, API versions, and each connection's keys."""
        combined: dict[tuple, list] = {}  # (client id, ip, connection, api key, name, version) -> [requests, first]
        names = ("client_id", "client_ip", "connection_id", "api_key", "api_name", "api_version", "request_ts",
                 "response_ts")  # fmt: skip
        for *key, request_ts, response_ts in zip(*(cells(ex[c]) for c in names), strict=True):
            when = request_ts if request_ts is not None else response_ts
            seen = combined.get(tuple(key))
            if seen is None:
                combined[tuple(key)] = [1, when]
            else:
                seen[0] += 1
                if when is not None and (seen[1] is None or when < seen[1]):
                    seen[1] = when
        for (client_id, client_ip, connection, api_key, api_name, api_version), (n, when) in combined.items():
            self._add((client_id, client_ip), connection, n, when, api_key, api_name, api_version)
        self._closed.clear()  # this piece held the last of their exchanges

    def _add(self, key: Hashable, connection: int, n: int, when: object, api_key: int | None, api_name: str | None,
             api_version: int | None) -> None:  # fmt: skip
        client = self.clients.get(key)
        client.requests += n
        if api_key is not None and api_version is not None:
            pair = (api_key, api_version)
            if pair in client.versions or len(client.versions) < VERSIONS_LIMIT:
                client.versions.setdefault(pair, api_name)
        closed = self._closed.get(connection)
        if closed is not None:
            is_kafka, name, version, counted = closed
            if key not in counted:
                counted.add(key)
                client.connections += 1
            if is_kafka and name is not None:
                client.see_software((name, version), when)  # type: ignore[arg-type]
            return
        keys = self._open.setdefault(connection, {})
        first = keys.get(key)
        if key not in keys or (when is not None and (first is None or when < first)):  # type: ignore[operator]
            keys[key] = when

    def add_connections(self, conns: Columns) -> None:
        rows = zip(*(cells(conns[c]) for c in ("connection_id", "is_kafka", "software_name", "software_version")),
                   strict=True)  # fmt: skip
        for connection, is_kafka, name, version in rows:
            keys = self._open.pop(connection, {})
            for key, first in keys.items():
                client = self.clients.get(key)
                client.connections += 1
                if is_kafka and name is not None:
                    client.see_software((name, version), first)
            self._closed[connection] = (is_kafka, name, version, set(keys))

    def merge(self, other: ClientFigures) -> None:
        self.clients.merge(other.clients)  # a task's connections are its own: none is open across tasks

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientFigures) and self.clients == other.clients

    def inventory(self, removed: Removed) -> pd.DataFrame:
        """:func:`kdissect.analysis.clients.inventory`'s table: one row per client id and host, most
        requests first, then an ``(other)`` row for the keys not kept."""
        import pandas as pd

        def order(item: tuple[Hashable, Client]) -> tuple:
            client_id, client_ip = item[0]  # type: ignore[misc]
            return client_id is None, str(client_id), client_ip is None, str(client_ip)

        ordered = sorted(self.clients.groups.items(), key=order)
        ordered.sort(key=lambda item: -item[1].requests)  # stable: ties stay in key order
        rows = [(*key, *_row(client, removed)) for key, client in ordered]  # type: ignore[misc]
        other = self.clients.other
        if other.requests:
            rows.append((OTHER, None, *_row(other, removed)))
        columns = ["client_id", "client_ip", "software", "connections", "requests", "api_versions",
                   "removed_versions"]  # fmt: skip
        return pd.DataFrame(rows, columns=columns)[COLUMNS]


def _row(client: Client, removed: Removed) -> tuple:
    software = sorted(client.software.items(), key=lambda kv: (kv[1] is None, kv[1] or 0, str(kv[0])))
    names = ", ".join(name if version is None else f"{name} {version}" for (name, version), _ in software)
    pairs = sorted(client.versions)
    used = [f"{client.versions[p] if client.versions[p] is not None else '?'} v{p[1]}" for p in pairs]
    gone = [text for p, text in zip(pairs, used, strict=True) if removed(*p)]
    return names or None, client.connections, client.requests, ", ".join(used), ", ".join(gone) or None
