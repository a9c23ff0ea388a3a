"""Shared by the source tests: a whole capture through the push parser, and events as kind names."""

from __future__ import annotations

from kdissect.sources import CaptureParser, CaptureRecord, ReaderLimits, SourceAnomaly


def records(data: bytes, limits: ReaderLimits | None = None) -> list[CaptureRecord | SourceAnomaly]:
    parser = CaptureParser(limits)
    return parser.feed(data) + parser.close()


def kinds(events: list) -> list[str]:
    return [e.kind if isinstance(e, SourceAnomaly) else type(e).__name__ for e in events]
