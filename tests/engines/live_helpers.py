"""Shared by the live tests: run the CLI, read a table directory, compare two of them."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pandas.testing as pdt

from kdissect.tables.columns import TABLES

KDISSECT = [sys.executable, "-m", "kdissect.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def analyze(capture: Path, out: Path) -> None:
    subprocess.run([*KDISSECT, "analyze", str(capture), "--out", str(out)], check=True, capture_output=True)


def read_tables(out: Path) -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(out / f"{name}.parquet") for name in TABLES}


def assert_same_tables(left: Path, right: Path) -> tuple[set[str], set[str]]:
    """Every table of two ``--out`` directories holds the same rows (pieces joined), ``source_file``
    aside: the inputs each side named, returned for the caller to check (a live run reads a pipe,
    a growing file or a device where ``analyze`` read a finished file)."""
    a, b = read_tables(left), read_tables(right)
    for name in TABLES:
        pdt.assert_frame_equal(*(t[name].drop(columns="source_file").reset_index(drop=True) for t in (a, b)), obj=name)
    return tuple({str(v) for t in side.values() for v in t["source_file"].dropna()} for side in (a, b))  # type: ignore[return-value]
