"""The one lister of capture paths, for every engine and face: what a run reads, given files,
directories, globs and (for the Spark engine) remote URIs.

A directory stands for the capture files in it, by name (``*.pcap``, ``*.pcapng``, ``*.cap``, and
``.gz`` of them), sorted: its README, JSON or scripts are not captures, and are not listed, however
the directory is reached (local, ``hdfs://``, ``s3://``). A file named is read whatever its name (an
``unreadable_file`` row if it is no capture).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from os import PathLike

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap")  # what a directory is searched for (also + ".gz")


def is_capture_name(name: str) -> bool:
    return name.lower().removesuffix(".gz").endswith(CAPTURE_SUFFIXES)


def list_captures(paths: Iterable[str | PathLike[str]], *, uris: bool = False, missing_ok: bool = False
                  ) -> list[tuple[str, int | None]]:  # fmt: skip
    """(path, size in bytes) of each capture file named, in the order given. With ``uris``, remote
    URIs are listed through pyarrow's file systems. Raises ``IsADirectoryError`` for a directory
    holding no capture file and ``FileNotFoundError`` for a path that does not exist, unless
    ``missing_ok`` (the Spark engine: such a file is reported by name, size None, by the task that
    fails to read it, as a remote file that vanished is)."""
    found: list[tuple[str, int | None]] = []
    for arg in paths:
        given = os.fspath(arg)
        if uris and "://" in given:
            found += _remote(given, missing_ok)
        elif os.path.isdir(given):
            names = [os.path.join(given, n) for n in sorted(os.listdir(given)) if is_capture_name(n)]
            found += _directory(given, [(p, os.path.getsize(p)) for p in names if os.path.isfile(p)])
        elif glob.has_magic(given) and (matches := sorted(glob.glob(given))):
            found += [(p, os.path.getsize(p)) for p in matches if os.path.isfile(p)]
        elif os.path.isfile(given):
            found.append((given, os.path.getsize(given)))
        elif missing_ok:
            found.append((given, None))
        else:
            raise FileNotFoundError(f"{given}: no such file")
    return found


def _directory(path: str, captures: list[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    if not captures:
        suffixes = ", ".join(f"*{s}" for s in CAPTURE_SUFFIXES)
        raise IsADirectoryError(f"{path} is a directory with no capture file ({suffixes}, or .gz of them)")
    return captures


def _remote(uri: str, missing_ok: bool) -> list[tuple[str, int | None]]:
    from pyarrow import fs

    filesystem, inner = fs.FileSystem.from_uri(uri)
    info = filesystem.get_file_info(inner)
    if info.type == fs.FileType.Directory:
        scheme = uri.split("://", 1)[0]
        infos = sorted(filesystem.get_file_info(fs.FileSelector(inner, recursive=False)), key=lambda i: i.path)
        return _directory(uri, [(f"{scheme}://{i.path}", i.size) for i in infos
                                if i.type == fs.FileType.File and is_capture_name(i.base_name)])  # fmt: skip
    if info.type == fs.FileType.File:
        return [(uri, info.size)]
    if missing_ok:
        return [(uri, None)]
    raise FileNotFoundError(f"{uri}: no such file")
