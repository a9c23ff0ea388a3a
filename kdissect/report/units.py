"""Numbers as people read them: sizes in B/kB/MB/GB, byte rates in B/s, durations in ms or s, counts
with thousands separators, shares in %. One module, used by every face (HTML and Markdown reports,
the ``analyze`` summary, the ``live`` console), so a figure reads the same everywhere.

:data:`COLUMN_UNITS` is the one registry of which report column holds which unit; a column not in it
is shown by :func:`kdissect.report.document.cell_text` as it is (ids, offsets, ports, epochs: exact,
no separators). Units are decimal (1 kB = 1000 B), like network rates and disk sizes.
"""

from __future__ import annotations

from collections.abc import Callable

_SIZES = ("B", "kB", "MB", "GB", "TB")


def _scaled(n: float, suffix: str = "") -> str:
    """``n`` bytes in the largest unit that keeps it at or above 1 (three significant digits)."""
    for unit in _SIZES:
        if abs(n) < 1000 or unit == _SIZES[-1]:
            if unit == "B":
                return f"{n:,.0f} B{suffix}"
            return f"{n:.3g} {unit}{suffix}" if abs(n) < 100 else f"{n:,.0f} {unit}{suffix}"
        n /= 1000
    raise AssertionError("unreachable")


def bytes_text(n: float) -> str:
    """A size: ``85 B``, ``2.43 kB``, ``197 MB``."""
    return _scaled(float(n))


def byte_rate_text(n: float) -> str:
    """A throughput: ``290 B/s``, ``43.2 kB/s``."""
    return _scaled(float(n), "/s")


def ms_text(value: float | None) -> str:
    """A latency for fixed-width columns whose header says ``ms`` (the terminal tables): two decimals."""
    return "-" if value is None else f"{value:.2f}"


def duration_text(ms: float) -> str:
    """A duration given in ms: ``0 ms``, ``0.32 ms``, ``501.1 ms``, ``3.00 s``, ``2.5 min``."""
    if abs(ms) < 1:
        return f"{ms:.3g} ms"
    if abs(ms) < 1000:
        return f"{ms:.0f} ms" if float(ms).is_integer() else f"{ms:.1f} ms"
    if abs(ms) < 60_000:
        return f"{ms / 1000:.0f} s" if float(ms / 1000).is_integer() else f"{ms / 1000:.2f} s"
    return f"{ms / 60_000:,.1f} min"


def count_text(n: float) -> str:
    """A count: ``1,234`` (a fractional count, such as a mean, keeps one decimal)."""
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def per_second_text(n: float) -> str:
    """An event rate: ``14/s``, ``2.18/s``."""
    return f"{n:,.0f}/s" if abs(n) >= 100 or float(n).is_integer() else f"{n:.3g}/s"


def share_text(fraction: float) -> str:
    """A share given as a fraction: ``0%``, ``12.5%``, ``<0.1%`` (never rounded to a false zero)."""
    pct = fraction * 100
    if pct == 0 or pct >= 0.1:
        return f"{pct:.3g}%"
    return "<0.1%"


def ratio_text(n: float) -> str:
    """A ratio of two sizes: ``1.39×``."""
    return f"{n:.3g}×"


# Columns holding counts, and the latency tables' percentile columns (in ms).
_COUNTS = (
    "count", "requests", "errors", "records", "batches", "fetches", "connections", "joins", "members",
    "returned_data", "waited_full", "overran", "rebalance_errors", "lag", "last_lag", "max_lag",
)  # fmt: skip
_PERCENTILES = ("p50", "p90", "p99", "p999", "max")

COLUMN_UNITS: dict[str, Callable[[float], str]] = {
    **dict.fromkeys(_PERCENTILES, duration_text),
    **dict.fromkeys(_COUNTS, count_text),
    "bytes": bytes_text,
    "bytes_to_brokers": bytes_text,
    "bytes_to_clients": bytes_text,
    "bytes_per_s": byte_rate_text,
    "requests_per_s": per_second_text,
    "records_per_s": per_second_text,
    "error_rate": share_text,
    "ratio": ratio_text,
}
_SUFFIX_UNITS: tuple[tuple[str, Callable[[float], str]], ...] = (
    ("_bytes", bytes_text),
    ("_ms", duration_text),
)


def unit_for(column: str) -> Callable[[float], str] | None:
    """How a column's numbers are written (by the column's name), or None for exact values."""
    if column in COLUMN_UNITS:
        return COLUMN_UNITS[column]
    for suffix, fmt in _SUFFIX_UNITS:
        if column.endswith(suffix):
            return fmt
    return None
