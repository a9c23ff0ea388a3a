"""Kafka per connection: byte runs and gaps in, frames -> decoded messages -> paired exchanges out.

Rule: sans-I/O and per connection; the only loop back is inside this stage (framing takes hints
from decoding and pairing, see ``validators``), and it never reaches into later stages.
"""

from kdissect.kafka.framing import Frame, FrameSplitter, Lost, Skipped, Validator
from kdissect.kafka.lifecycle import Lifecycle, State
from kdissect.kafka.pairing import Pairer, expects_response
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.kafka.session import KafkaConnection
from kdissect.kafka.validators import RequestValidator, ResponseValidator

__all__ = [
    "Frame",
    "FrameSplitter",
    "KafkaConnection",
    "KafkaPipeline",
    "Lifecycle",
    "Lost",
    "Pairer",
    "RequestValidator",
    "ResponseValidator",
    "Skipped",
    "State",
    "Validator",
    "expects_response",
]
