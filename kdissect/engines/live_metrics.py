"""Prometheus endpoint of ``kdissect live --metrics-port N``.

Series (all prefixed ``kdissect_``): ``requests_total``, ``request_errors_total`` (by error name;
normal protocol steps such as a first join's MEMBER_ID_REQUIRED go to ``expected_answers_total``),
``request_bytes_total``, ``response_bytes_total`` and the ``request_latency_seconds`` histogram,
labelled by ``api``, ``broker`` and ``client_id``; ``captured_packets_total``, ``captured_bytes_total``,
``kernel_drops_total`` (libpcap's count), ``reassembly_gaps_total``, ``anomalies_total`` (by kind) and
``open_connections``. Client ids and brokers come from the wire, so each label keeps at most
``max_label_values`` distinct values; later ones are reported as ``(other)``. Its own registry, so
nothing else of the process leaks in.
"""

from __future__ import annotations

from itertools import count, repeat
from operator import is_not
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from kdissect.analysis.expected import is_expected
from kdissect.analysis.rolling import Exchanged, LabelCap
from kdissect.engines.live_histogram import PieceHistogram
from kdissect.lazy import lazy_module

np = lazy_module("numpy")

# Kafka latencies span sub-millisecond requests to long-poll Fetches and rebalances (seconds).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class LiveMetrics:
    """Prometheus series updated by the live engine; ``serve`` starts the HTTP endpoint."""

    def __init__(self, max_label_values: int = 100) -> None:
        self.registry = CollectorRegistry()
        self._client_cap = LabelCap(max_label_values)
        self._broker_cap = LabelCap(max_label_values)
        self._error_cap = LabelCap(max_label_values)
        labels = ("api", "broker", "client_id")
        r = self.registry
        self.requests = Counter("kdissect_requests", "Kafka requests seen (paired or not)", labels, registry=r)
        self.errors = Counter(
            "kdissect_request_errors", "Non-zero error codes in responses", (*labels, "error"), registry=r
        )
        self.expected = Counter(
            "kdissect_expected_answers",
            "Error codes that are a normal protocol step (kdissect.analysis.expected), not failures",
            (*labels, "error"),
            registry=r,
        )
        self.latency = PieceHistogram(
            "kdissect_request_latency_seconds",
            "Last request packet to first response packet",
            labels,
            LATENCY_BUCKETS,
            r,
        )
        self.request_bytes = Counter("kdissect_request_bytes", "Bytes of request frames", labels, registry=r)
        self.response_bytes = Counter("kdissect_response_bytes", "Bytes of response frames", labels, registry=r)
        self.packets = Counter("kdissect_captured_packets", "Packets captured", registry=r)
        self.bytes = Counter("kdissect_captured_bytes", "Bytes captured (link layer included)", registry=r)
        self.drops = Counter("kdissect_kernel_drops", "Packets the kernel dropped (libpcap statistics)", registry=r)
        self.gaps = Counter("kdissect_reassembly_gaps", "Stretches of TCP bytes missing from the capture", registry=r)
        self.anomalies = Counter("kdissect_anomalies", "Anomalies by kind", ("kind",), registry=r)
        self.open_connections = Gauge("kdissect_open_connections", "TCP connections being followed", registry=r)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Serve ``/metrics`` on a background thread (prometheus_client's own server); on this host only
        unless ``addr`` says otherwise, as the labels name clients and brokers."""
        start_http_server(port, addr=addr, registry=self.registry)

    def add_exchanges(self, ex: Exchanged) -> None:
        """A piece of exchanges: labels capped in the exchanges' order (each column's values as first met:
        the caps are independent), then each label set's counts, bytes and latencies at once."""
        n = len(ex)
        if not n:
            return
        brokers = {broker: self._broker_cap(broker) for broker in dict.fromkeys(ex.broker)}
        clients = {client: self._client_cap(client) for client in dict.fromkeys(ex.client_id)}
        labels = list(zip(ex.api, map(brokers.__getitem__, ex.broker), map(clients.__getitem__, ex.client_id),
                          strict=True))  # fmt: skip
        codes, groups = _coded(labels)
        request_bytes = np.bincount(codes, weights=ex.request_bytes, minlength=n).tolist()  # (exact below 2**53)
        response_bytes = np.bincount(codes, weights=ex.response_bytes, minlength=n).tolist()
        has_latency = np.fromiter(map(is_not, ex.latency_ms, repeat(None)), dtype=bool, count=n)
        seconds = np.array(ex.latency_ms, dtype=np.float64).tolist() if has_latency.any() else []
        latencies = _rows_by_code(codes, has_latency)
        found, times = np.unique(codes, return_counts=True)  # (codes ascending: the label sets as first met)
        for code, requests in zip(found.tolist(), times.tolist(), strict=True):
            group = groups[code]
            self.requests.labels(*group).inc(requests)
            self.request_bytes.labels(*group).inc(request_bytes[code])
            self.response_bytes.labels(*group).inc(response_bytes[code])
            rows = latencies.get(code)  # (a label set with no latency yet still shows its empty buckets)
            self.latency.observe_many(group, [] if rows is None else [seconds[row] / 1000 for row in rows.tolist()])
        if any(ex.error_names):
            self._errors(ex, labels)

    def _errors(self, ex: Exchanged, labels: list[tuple[str, str, str]]) -> None:
        """Each non-zero error code under its exchange's labels and its (capped) name."""
        error_cap = self._error_cap
        for api, group, names in zip(ex.api, labels, ex.error_names, strict=True):
            for name in names:
                (self.expected if is_expected(api, name) else self.errors).labels(*group, error_cap(name)).inc()

    def anomaly(self, kind: str) -> None:
        self.anomalies.labels(self._error_cap(kind)).inc()
        if kind == "gap":
            self.gaps.inc()


def _coded(keys: list) -> tuple[np.ndarray, dict[int, Any]]:
    """Each row's key as a number (the row it is first met at: ascending numbers are the keys as first
    met), and the key of each number."""
    first: dict[Any, int] = {}
    codes = np.fromiter(map(first.setdefault, keys, count()), dtype=np.int64, count=len(keys))
    return codes, {code: key for key, code in first.items()}


def _rows_by_code(codes: np.ndarray, chosen: np.ndarray) -> dict[int, np.ndarray]:
    """The indexes of each code's chosen rows, in order: a stable sort of the rows by code, so no Python
    step per row."""
    rows = np.flatnonzero(chosen)
    if not len(rows):
        return {}
    chosen_codes = codes[rows]
    order = np.argsort(chosen_codes, kind="stable")
    ordered = chosen_codes[order]
    firsts = np.flatnonzero(np.diff(ordered, prepend=-1))
    return dict(zip(ordered[firsts].tolist(), np.split(rows[order], firsts[1:]), strict=True))
