"""Reading a key log file (``--tls-keylog``) into the TLS stage's :class:`~kdissect.tls.keylog.KeyLog`.

The one place the file is opened: the core only ever sees its text. ``live`` keeps the reader and
calls :meth:`KeyLogFile.read` as it goes, since clients append a line (or five) per connection.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from kdissect.tls.keylog import KeyLog

CHUNK = 1 << 20


class KeyLogFile:
    """A key log file and how far it was read."""

    def __init__(self, path: str | PathLike[str], keylog: KeyLog | None = None) -> None:
        self.path = Path(path)
        self.keylog = keylog if keylog is not None else KeyLog()
        self._at = 0

    def read(self) -> int:
        """Index what was appended since the last call (from the start if the file was replaced
        by a shorter one); returns the bytes read. Raises ``OSError`` if it cannot be read."""
        with self.path.open("rb") as f:
            if f.seek(0, 2) < self._at:
                self._at = 0
            f.seek(self._at)
            total = 0
            while chunk := f.read(CHUNK):
                self.keylog.feed(chunk)
                total += len(chunk)
        self._at += total
        return total


    def follow(self) -> int:
        """:meth:`read` for a run that goes on: a key log gone or unreadable for now reads as nothing new."""
        try:
            return self.read()
        except OSError:
            return 0


def load_keylog(path: str | PathLike[str]) -> KeyLog:
    """A whole key log file, read once."""
    reader = KeyLogFile(path)
    reader.read()
    reader.keylog.close()
    return reader.keylog
