"""One lister of capture paths for every engine: a directory, local or remote, stands for its capture
files only; files named are kept whatever their name; a missing path fails at once unless the Spark
engine keeps it for its task to report."""

from __future__ import annotations

from pathlib import Path

import pytest

from kdissect.engines.paths import list_captures


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    for name, size in (("b.pcapng", 3), ("a.pcap", 2), ("c.cap.gz", 4), ("README.md", 5), ("truth.json", 6),
                       ("make.py", 7), ("D.PCAP", 1)):  # fmt: skip
        (tmp_path / name).write_bytes(b"x" * size)
    (tmp_path / "sub.pcap").mkdir()
    return tmp_path


def test_a_directory_stands_for_its_capture_files_sorted(directory: Path) -> None:
    want = [(str(directory / n), s) for n, s in (("D.PCAP", 1), ("a.pcap", 2), ("b.pcapng", 3), ("c.cap.gz", 4))]
    assert list_captures([directory]) == want
    assert list_captures([str(directory)], uris=True, missing_ok=True) == want


def test_a_remote_directory_is_filtered_the_same_way(directory: Path) -> None:
    got = list_captures([f"file://{directory}"], uris=True)
    assert got == [(f"file://{directory}/{n}", s) for n, s in (("D.PCAP", 1), ("a.pcap", 2), ("b.pcapng", 3),
                                                                ("c.cap.gz", 4))]  # fmt: skip


def test_files_named_are_kept_whatever_their_name_and_globs_expand(directory: Path) -> None:
    assert list_captures([directory / "README.md", directory / "a.pcap"]) == [
        (str(directory / "README.md"), 5), (str(directory / "a.pcap"), 2)]  # fmt: skip
    assert [p for p, _ in list_captures([str(directory / "*.json")])] == [str(directory / "truth.json")]


def test_missing_paths_and_empty_directories(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"gone\.pcap: no such file"):
        list_captures([tmp_path / "gone.pcap"])
    assert list_captures([tmp_path / "gone.pcap"], uris=True, missing_ok=True) == [(str(tmp_path / "gone.pcap"), None)]
    (tmp_path / "notes.txt").write_text("x")
    for uris in (False, True):
        with pytest.raises(IsADirectoryError, match="no capture file"):
            list_captures([f"file://{tmp_path}" if uris else tmp_path], uris=uris)
    with pytest.raises(FileNotFoundError):
        list_captures([f"file://{tmp_path}/gone.pcap"], uris=True)
