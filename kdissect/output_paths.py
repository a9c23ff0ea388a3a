"""Can an output be written where the command line says? Checked before any input is read, so a typo
in ``-o`` or ``--out`` costs a one-line message, not a whole run followed by an errno."""

from __future__ import annotations

import os
from pathlib import Path


def file_problem(path: Path, option: str) -> str | None:
    """Why ``path`` cannot be written as a file (new or replaced), in plain words; None when it can."""
    if path.is_dir():
        return f"{option} {path} is a directory: give a file name in it"
    folder = path.parent
    if not folder.exists():
        return f"{option} {path}: the directory {folder} does not exist"
    if not folder.is_dir():
        return f"{option} {path}: {folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"{option} {path}: no permission to write there"
    return None


def directory_problem(path: Path, option: str) -> str | None:
    """Why ``path`` cannot be (or become) a directory to write files into; None when it can. Missing
    directories are made, so the nearest existing one must take new entries."""
    if path.exists() and not path.is_dir():
        return f"{option} {path} is a file: give a directory to write the tables into"
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{option} {path}: {existing} is a file, not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{option} {path}: no permission to write in {existing}"
    return None
