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


def assert_same_tables(left: Path, right: Path) -> None:
    """Every table of two ``--out`` directories holds the same rows (pieces joined)."""
    a, b = read_tables(left), read_tables(right)
    for name in TABLES:
        pdt.assert_frame_equal(a[name].reset_index(drop=True), b[name].reset_index(drop=True), obj=name)
