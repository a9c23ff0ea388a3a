"""Kafka protocol decoders: bytes in, plain Python data out.

Knows nothing about packets, files, pandas or Spark, so it can be reused on its own.
"""

from .api import decode_data, decode_request, decode_response
from .errors import DecodeError, DecodeWarning

__all__ = ["DecodeError", "DecodeWarning", "decode_data", "decode_request", "decode_response"]
