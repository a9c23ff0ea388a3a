"""Capture bytes that are still arriving: a pipe (stdin), a file being written, a rotated set.

The I/O front of ``kdissect live --read``. It only moves bytes: every byte goes through the
same sans-I/O :class:`~kdissect.sources.reader.CaptureParser` as a file does, one parser per
file (each file of a rotated set has its own header). ``poll`` never blocks longer than asked,
so the caller keeps its one-second display and notices Ctrl-C.

Rules:
- ``-`` (or any pipe) ends at end of file.
- A regular file is followed as it grows, like ``tail -f``, until the caller stops; with
  ``follow=False`` it ends at its current end.
- A directory is a rotated capture set (``tcpdump -C``/``-G``, ``dumpcap -b``): its files are read
  in natural name order (``cap.pcap`` < ``cap.pcap2`` < ``cap.pcap10``). The newest file is
  followed; once a later file appears, the current one is read to its end and closed. Compressed
  rotated copies (``.gz``, ``.zst``, ...) are skipped: they repeat a file already read.
"""

from __future__ import annotations

import os
import re
import select
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kdissect.sources.native_records import NativeRecords
from kdissect.sources.reader import CaptureParser
from kdissect.sources.record_loop import ReaderLimits
from kdissect.sources.shapes import AnomalyKind, CaptureFormatError, RecordEvent, SourceAnomaly

CHUNK = 1 << 20
_COMPRESSED = (".gz", ".zst", ".xz", ".bz2", ".zip")
_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> list[int | str]:
    """``cap10`` after ``cap9``: runs of digits compare as numbers."""
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(name)]


class _Input:
    """One open input: a file descriptor and its parser."""

    def __init__(self, fd: int, name: str, limits: ReaderLimits | None, native: NativeRecords | None, *,
                 stdin: bool = False) -> None:  # fmt: skip
        self.fd, self.name, self.stdin = fd, name, stdin
        self.parser = CaptureParser(limits, native)
        # A pipe or socket (or stdin, whatever it is) ends at end of file; a regular file may grow.
        self.is_pipe = stdin or not stat.S_ISREG(os.fstat(fd).st_mode)

    def read(self) -> bytes:
        try:
            return os.read(self.fd, CHUNK)
        except BlockingIOError:
            return b""


class FollowedCapture:
    """Capture records from ``path`` (``"-"`` for stdin) as they are written.

    ``poll(timeout)`` returns the records completed so far (possibly none) and waits at most
    ``timeout`` seconds for more; ``ended`` turns true once the input is over. Raises
    ``CaptureFormatError`` when an input is not a capture, ``OSError`` when it cannot be read.

    With ``native`` (``native_records``), runs of common records come out as the segments the native
    walk made of them (with each record, for a raw copy, when it was made ``with_records``): the
    reader of the records arms it and counts what it took, as ``CaptureDecoder`` does. A walk stops
    before a record not complete yet, as the Python step does, so a file that grows is read on from there.
    """

    def __init__(
        self,
        path: str,
        *,
        follow: bool = True,
        limits: ReaderLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        native: NativeRecords | None = None,
    ) -> None:
        self.path, self.follow, self._limits, self._clock = path, follow, limits, clock
        self._native = native
        self.bytes_read = 0
        self.files_read: list[str] = []
        # (file, why) of each file of a rotated set not read: not a capture, or a second name of a file read
        self.skipped: list[tuple[str, str]] = []
        self._read_ids: dict[tuple[int, int], str] = {}
        self.ended = False
        self._dir = Path(path) if path != "-" and Path(path).is_dir() else None
        self._current: _Input | None = None
        if path == "-":
            self._current = _Input(sys.stdin.fileno(), "<stdin>", limits, native, stdin=True)
        elif self._dir is None:
            self._current = _Input(os.open(path, os.O_RDONLY), path, limits, native)
        if self._current is not None:
            self.files_read.append(self._current.name)

    @property
    def name(self) -> str | None:
        """The input the last records came from (a rotated set's current file)."""
        return self.files_read[-1] if self.files_read else None

    def poll(self, timeout: float) -> list[RecordEvent]:
        """Records that became complete; waits up to ``timeout`` s when nothing is new."""
        deadline = self._clock() + timeout
        while not self.ended:
            if self._current is None and not self._open_next():
                if not self.follow:
                    self.ended = True
                    break
                if not self._sleep_until(deadline):
                    break
                continue
            current = self._current
            assert current is not None
            if current.is_pipe and not self._readable(current, deadline):
                break
            data = current.read()
            if data:
                self.bytes_read += len(data)
                return self._parsed(current, data)
            if current.is_pipe or not self.follow or self._later_file_exists():
                return self._close_current()
            if not self._sleep_until(deadline):
                break
        return []

    def close(self) -> list[RecordEvent]:
        """Stop reading: the last records of the open input (and its truncation, if any)."""
        self.ended = True
        return self._close_current()

    # -- inputs ---------------------------------------------------------------------------
    def _parsed(self, current: _Input, data: bytes) -> list[RecordEvent]:
        """The records ``data`` completes; in a rotated set, a file that is not a capture is named."""
        try:
            return current.parser.feed(data)
        except CaptureFormatError as exc:
            if self._dir is None:
                raise
            return self._skip_current(str(exc))

    def _skip_current(self, why: str) -> list[RecordEvent]:
        """A file of a rotated set that is not a capture: named, and the set read on (as ``analyze``
        skips such a file in a directory)."""
        current, self._current = self._current, None
        assert current is not None
        os.close(current.fd)
        self.skipped.append((current.name, why))
        return [SourceAnomaly(AnomalyKind.UNREADABLE_FILE, f"{current.name}: {why}")]

    def _close_current(self) -> list[RecordEvent]:
        current, self._current = self._current, None
        if current is None:
            return []
        if self._dir is None:
            self.ended = True
        else:
            try:
                events = current.parser.close()
            except CaptureFormatError as exc:  # too short to hold a capture header
                self._current = current
                return self._skip_current(str(exc))
            os.close(current.fd)
            return events
        if not current.stdin:
            os.close(current.fd)
        return current.parser.close()

    def _candidates(self) -> list[Path]:
        assert self._dir is not None
        files = [p for p in self._dir.iterdir() if p.is_file() and not p.name.endswith(_COMPRESSED)]
        return sorted(files, key=lambda p: natural_key(p.name))

    def _unread(self) -> list[Path]:
        last = natural_key(Path(self.files_read[-1]).name) if self.files_read else None
        return [p for p in self._candidates() if last is None or natural_key(p.name) > last]

    def _open_next(self) -> bool:
        if self._dir is None:
            return False
        for path in self._unread():
            self.files_read.append(str(path))
            fd = os.open(path, os.O_RDONLY)
            st = os.fstat(fd)
            same = self._read_ids.setdefault((st.st_dev, st.st_ino), str(path))
            if same == str(path):
                self._current = _Input(fd, str(path), self._limits, self._native)
                return True
            os.close(fd)  # another name of a file already read: its packets once
            self.skipped.append((str(path), f"the same file as {same}: read once"))
        return False

    def _later_file_exists(self) -> bool:
        return self._dir is not None and bool(self._unread())

    def _readable(self, current: _Input, deadline: float) -> bool:
        wait = max(0.0, deadline - self._clock())
        ready, _, _ = select.select([current.fd], [], [], wait)
        return bool(ready)

    def _sleep_until(self, deadline: float) -> bool:
        """Wait a little for more bytes; False once the deadline has passed."""
        left = deadline - self._clock()
        if left <= 0:
            return False
        time.sleep(min(left, 0.05))
        return True
