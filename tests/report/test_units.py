"""Numbers with their units, the same in every face (report cells, chart axes, the live console)."""

from __future__ import annotations

import pytest

from kdissect.report.units import (
    byte_rate_text,
    bytes_text,
    count_text,
    duration_text,
    per_second_text,
    share_text,
    unit_for,
)


@pytest.mark.parametrize(
    ("text", "value", "shown"),
    [
        (byte_rate_text, 43_248.185, "43.2 kB/s"),
        (byte_rate_text, 290.66, "291 B/s"),
        (bytes_text, 197_057_896, "197 MB"),
        (bytes_text, 2429, "2.43 kB"),
        (bytes_text, 0, "0 B"),
        (duration_text, 0.3141, "0.314 ms"),
        (duration_text, 501.065, "501.1 ms"),
        (duration_text, 500, "500 ms"),
        (duration_text, 3003.971, "3.00 s"),
        (duration_text, 1000, "1 s"),
        (duration_text, 300_000, "5.0 min"),
        (count_text, 12345, "12,345"),
        (per_second_text, 2.1758, "2.18/s"),
        (share_text, 0.125, "12.5%"),
        (share_text, 0.0004, "<0.1%"),  # a few errors are never rounded to a false zero
        (share_text, 0.0, "0%"),
    ],
)
def test_numbers_read_with_their_unit(text, value: float, shown: str) -> None:
    assert text(value) == shown


def test_columns_take_their_unit_by_name_and_ids_stay_exact() -> None:
    assert unit_for("bytes_per_s") is byte_rate_text and unit_for("compressed_bytes") is bytes_text
    assert unit_for("latency_ms") is duration_text and unit_for("p99") is duration_text
    for exact in ("partition", "offset", "correlation_id", "port", "node_id", "producer_id", "api_version"):
        assert unit_for(exact) is None
