"""Resource bounds of record batches, through the command line (see ``bounds_helpers``)."""

from __future__ import annotations

from pathlib import Path

from tests.bounds_helpers import MiB, anomaly_count, assert_bounded, assert_linear, two_sizes


def test_lz4_batch_of_tiny_frames_is_linear(tmp_path: Path) -> None:
    """Each frame used to hand the decompressor (and get back a copy of) everything after it:
    200k frames took 17 s, 400k 87 s."""
    runs = two_sizes(tmp_path, "lz4_tiny_frames", 100_000)  # the summary decodes the batches for their anomalies
    assert_linear(runs)
    assert_bounded(runs)


def test_storm_of_bad_crc_legacy_messages_is_linear_and_flat(tmp_path: Path, tmp_path_factory) -> None:
    """Every message used to cost a row in the anomalies table and a batch object (8.5 GB, 284 s):
    now one counted row past 100 per connection, and 50,000 batches decoded per records field."""
    out = tmp_path_factory.mktemp("out")
    runs = two_sizes(tmp_path, "legacy_crc_storm", 60_000, "--out", str(out))
    assert_linear(runs)
    assert_bounded(runs, flat=True)
    assert anomaly_count(runs[2].stdout, "crc_mismatch") == 50_000  # counted, though held in 101 rows
    assert anomaly_count(runs[2].stdout, "cap") == 1


def test_crc_storm_anomalies_are_counted_not_listed(tmp_path: Path) -> None:
    runs = two_sizes(tmp_path, "legacy_crc_storm", 10_000)
    assert [anomaly_count(run.stdout, "crc_mismatch") for run in runs[1:]] == [10_000, 20_000]
    assert_bounded(runs, budget=512 * MiB)


def test_gzip_wrapper_of_a_million_bad_crc_messages_stays_small(tmp_path: Path, tmp_path_factory) -> None:
    """A few MiB of gzip inflating to 1.2M inner messages with bad CRCs took 1.6 GB at 2.5M (a record and
    a formatted warning each, the batch bound counting only the one top-level message): now 50,000
    inner messages decoded per records field, the rest counted, and one counted crc_mismatch warning."""
    out = tmp_path_factory.mktemp("out")
    for args in (("--out", str(out)), ("--no-payloads",), ("report", "-o", str(out / "report.html"))):
        runs = two_sizes(tmp_path, "gzip_wrapper_storm", 600_000, *args)
        assert_linear(runs)
        assert_bounded(runs, budget=384 * MiB, flat=True)
        if args[0] != "report":
            assert anomaly_count(runs[2].stdout, "crc_mismatch") == 1
            assert anomaly_count(runs[2].stdout, "cap") == 1
