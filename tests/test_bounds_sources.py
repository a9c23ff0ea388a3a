"""Resource bounds of the capture sources, through the command line (see ``bounds_helpers``)."""

from __future__ import annotations

from pathlib import Path

from tests.bounds_helpers import assert_bounded, assert_linear, two_sizes


def test_ip_fragments_are_linear_and_bounded(tmp_path: Path) -> None:
    """Thousands of fragments of each datagram, all holes and overlaps: each used to rescan every
    fragment of its datagram (2k fragments 2.5 s, 8k 34 s)."""
    runs = two_sizes(tmp_path, "ip_fragments", 12_000)
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    assert "fragment_incomplete" in runs[2].stdout
