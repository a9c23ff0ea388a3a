"""Files a distributed run reads and writes, wherever they are: local paths, or any URI pyarrow's
file systems reach (``hdfs://``, ``s3://``, ...). No pyspark here."""

from __future__ import annotations

import os
from typing import BinaryIO


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def local_path(path: str) -> str:
    return path.removeprefix("file://")


def file_system(path: str) -> tuple[object, str]:
    """(pyarrow file system, path inside it) for a local path or a URI."""
    from pyarrow import fs

    if is_local(path):
        return fs.LocalFileSystem(), os.path.abspath(local_path(path))
    return fs.FileSystem.from_uri(path)


def open_input(path: str) -> BinaryIO:
    """A seekable binary file for reading."""
    if is_local(path):
        return open(local_path(path), "rb")
    filesystem, inner = file_system(path)
    return filesystem.open_input_file(inner)  # type: ignore[attr-defined]


def open_output(path: str) -> BinaryIO:
    """A new file (its directory made) for writing."""
    filesystem, inner = file_system(path)
    filesystem.create_dir(inner.rsplit("/", 1)[0], recursive=True)  # type: ignore[attr-defined]
    return filesystem.open_output_stream(inner)  # type: ignore[attr-defined]


def remove_tree(path: str) -> None:
    """``path`` and everything under it, if it exists."""
    from pyarrow import fs

    filesystem, inner = file_system(path)
    if filesystem.get_file_info(inner).type == fs.FileType.Directory:  # type: ignore[attr-defined]
        filesystem.delete_dir(inner)  # type: ignore[attr-defined]
