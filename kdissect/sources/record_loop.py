"""The record loop shared by the pcap and pcapng parsers: step, resync, end of stream.

Both formats are a sequence of length-prefixed units. A unit whose length cannot be
right (absurd, or not matching its trailer) means the framing is lost; instead of
stopping, the loop scans forward byte by byte for the next position that looks like a
real unit, using a format-specific probe that must also see the unit after it (or the
end of the stream) before it believes a candidate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from kdissect.dataclass import dataclass
from kdissect.sources.shapes import AnomalyKind, RecordEvent, SourceAnomaly

# Probe verdicts; a positive probe result is the number of bytes it needs to decide.
ACCEPT = 0
REJECT = -1


@dataclass(frozen=True, slots=True)
class ReaderLimits:
    """Bounds that tell a corrupt length field from a real one and cap buffer use.

    The default captured-length bound is libpcap's largest snap length (256 KiB); a
    pcapng block may add headers and options on top.
    """

    max_caplen: int = 262_144
    max_block_len: int = 262_144 + 65_536


def checked_wire_len(orig: int, caplen: int, offset: int, ts_ns: int, out: list[RecordEvent]) -> int:
    """A wire length below the captured length is impossible: report it, trust the capture."""
    if orig >= caplen:
        return orig
    out.append(
        SourceAnomaly(
            AnomalyKind.BAD_RECORD, f"wire length {orig} is below the captured length {caplen}", offset, ts_ns
        )
    )
    return caplen


class CorruptFraming(Exception):
    """Raised by a format step when the unit at the current position cannot be real."""


class FramedFormat(ABC):
    """Base of the format parsers: subclasses implement ``_step`` and ``_probe``."""

    def __init__(self, limits: ReaderLimits) -> None:
        self._limits = limits
        self._lost_at: int | None = None  # stream offset where framing was lost

    def parse(self, buf: bytes, pos: int, base: int, out: list[RecordEvent], final: bool) -> tuple[int, int]:
        """Consume whole units of ``buf[pos:]`` (``base`` is the stream offset of
        ``buf[0]``), appending events to ``out``.

        Returns the position reached and how many bytes from there are needed before
        another call can make progress. With ``final`` the stream has ended: whatever
        is left is reported and the position returned is ``len(buf)``.
        """
        end = len(buf)
        while True:
            if self._lost_at is not None:
                pos, need = self._scan(buf, pos, base, out, final)
                if need:
                    return pos, need
                if self._lost_at is not None:  # the stream ended while scanning
                    self._lost_at = None
                    return end, 0
            try:
                step = self._step(buf, pos, base, out)
            except CorruptFraming as exc:
                out.append(SourceAnomaly(AnomalyKind.CORRUPT_RECORD, str(exc), base + pos))
                self._lost_at = base + pos
                pos += 1
                continue
            if step > 0:
                pos += step
                continue
            if not final:
                return pos, -step
            if pos < end:
                out.append(
                    SourceAnomaly(
                        AnomalyKind.TRUNCATED_FILE,
                        f"stream ended {end - pos} bytes into a unit of at least {-step} bytes",
                        base + pos,
                    )
                )
            return end, 0

    def _scan(self, buf: bytes, pos: int, base: int, out: list[RecordEvent], final: bool) -> tuple[int, int]:
        """Advance to the next position the probe accepts; (pos, need) as ``parse``."""
        assert self._lost_at is not None
        end = len(buf)
        while pos < end:
            verdict = self._probe(buf, pos, final)
            if verdict == ACCEPT:
                skipped = base + pos - self._lost_at
                out.append(SourceAnomaly(AnomalyKind.RESYNC, f"skipped {skipped} bytes", self._lost_at))
                self._lost_at = None
                return pos, 0
            if verdict > 0:
                return pos, verdict
            pos += 1
        if final:
            skipped = base + end - self._lost_at
            out.append(
                SourceAnomaly(
                    AnomalyKind.RESYNC, f"stream ended while resyncing: skipped {skipped} bytes", self._lost_at
                )
            )
        return end, 0 if final else 1

    @abstractmethod
    def _step(self, buf: bytes, pos: int, base: int, out: list[RecordEvent]) -> int:
        """Parse one unit at ``pos``: bytes consumed (> 0), or minus the bytes needed.

        Raises ``CorruptFraming`` when the unit's framing is impossible.
        """

    @abstractmethod
    def _probe(self, buf: bytes, pos: int, final: bool) -> int:
        """During resync: ``ACCEPT``, ``REJECT``, or bytes needed from ``pos`` to decide
        (never when ``final``)."""
