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

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from kdissect.analysis.expected import is_expected
from kdissect.analysis.rolling import Exchanged, LabelCap, in_order
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
        """A piece of exchanges: labels capped as first met (each column's values: the caps are independent;
        label sets come as first met), then each Prometheus label set's counts, bytes and latencies at once."""
        n = len(ex)
        if not n:
            return
        codes, groups = ex.by([(labelled.api, self._broker_cap(labelled.broker), self._client_cap(labelled.client_id))
                               for labelled in ex.labels])  # fmt: skip
        request_bytes = np.bincount(codes, weights=ex.request_bytes, minlength=n).tolist()  # (exact below 2**53)
        response_bytes = np.bincount(codes, weights=ex.response_bytes, minlength=n).tolist()
        requests = np.bincount(codes, minlength=len(groups)).tolist()
        latencies = dict(in_order(codes, ~np.isnan(ex.latency_ms)))
        seconds = ex.latency_ms / 1000
        for code, group in enumerate(groups):
            self.requests.labels(*group).inc(requests[code])
            self.request_bytes.labels(*group).inc(request_bytes[code])
            self.response_bytes.labels(*group).inc(response_bytes[code])
            rows = latencies.get(code)  # (a label set with no latency yet still shows its empty buckets)
            self.latency.observe_many(group, [] if rows is None else seconds[rows].tolist())
        if ex.errors:
            self._errors(ex, [groups[code] for code in codes[[row for row, _ in ex.errors]].tolist()])

    def _errors(self, ex: Exchanged, labels: list[tuple[str, str, str]]) -> None:
        """Each non-zero error code under its exchange's labels and its (capped) name."""
        error_cap, sets = self._error_cap, ex.labels
        for (row, names), group in zip(ex.errors, labels, strict=True):
            api = sets[ex.label[row]].api
            for name in names:
                (self.expected if is_expected(api, name) else self.errors).labels(*group, error_cap(name)).inc()

    def anomaly(self, kind: str) -> None:
        self.anomalies.labels(self._error_cap(kind)).inc()
        if kind == "gap":
            self.gaps.inc()
