"""Captures read together are merged by capture time, so captures taken side by side are all open at
once: what each holds read ahead must shrink with their number, or a hundred overlapping files hold
hundreds of MB whatever the budgets say."""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path

from kdissect.engines import local
from kdissect.sources.files import DEFAULT_CHUNK_SIZE, MERGED_READ_AHEAD, MIN_CHUNK_SIZE, merged_chunk_size

CAPTURE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-midstream-produce.pcap"  # 2.2 MB


def _peak_of_reading(paths: list[Path]) -> int:
    tracemalloc.start()
    try:
        for _ in local.events(paths):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_chunks_of_files_read_together_share_one_read_ahead() -> None:
    assert merged_chunk_size(1) == DEFAULT_CHUNK_SIZE  # one file: reads as before
    assert merged_chunk_size(32) * 32 <= MERGED_READ_AHEAD
    assert merged_chunk_size(100_000) == MIN_CHUNK_SIZE  # never a read per packet


def test_reading_many_overlapping_captures_holds_a_bounded_read_ahead(tmp_path: Path) -> None:
    copies = []
    for i in range(24):  # the same times: every file open at once (their packets dropped as copies)
        copies.append(tmp_path / f"side-{i:02d}.pcap")
        shutil.copy(CAPTURE, copies[-1])
    one, many = _peak_of_reading(copies[:1]), _peak_of_reading(copies)
    assert many - one < 48 << 20, f"24 overlapping files held {(many - one) >> 20} MB more than one"
