"""Every knob of a run, in one object: built by the CLI and by ``open_capture`` alike, and
handed unchanged to an engine, which gives each stage the part it reads."""

from __future__ import annotations

from dataclasses import dataclass

from kdissect.decoders.records import DEFAULT_LIMITS, FULL, Limits, Payloads

DEFAULT_PORTS = (9092, 9093, 9094)
DEFAULT_MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
DEFAULT_PROBE_LIMIT = 256 * 1024


@dataclass(frozen=True, slots=True)
class Options:
    """How to read a capture as Kafka, and how much of each record to keep.

    ``ports`` are where brokers listen; with ``auto_detect`` any other TCP connection whose bytes
    decode as Kafka requests within ``probe_limit`` bytes per direction is analysed too.
    ``max_frame`` is the largest size field believed. ``payloads`` says how much of each record key
    and value the records table keeps; ``limits`` bound record decoding (``max_decompressed``: the
    cap on one batch's decompressed size). ``keep_frames`` keeps every frame's bytes on its message
    (``raw``), not only those that did not decode (``show --raw`` and ``--save-frames``).
    """

    ports: tuple[int, ...] = DEFAULT_PORTS
    auto_detect: bool = True
    max_frame: int = DEFAULT_MAX_FRAME
    probe_limit: int = DEFAULT_PROBE_LIMIT
    payloads: Payloads = FULL
    limits: Limits = DEFAULT_LIMITS
    keep_frames: bool = False
