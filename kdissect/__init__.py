"""kdissect: a Kafka wire-protocol dissector and analyzer."""

from .decoders import DecodeError, decode_data, decode_request, decode_response

__all__ = ["DecodeError", "decode_data", "decode_request", "decode_response"]
__version__ = "0.1.0"
