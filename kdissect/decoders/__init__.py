"""Kafka protocol decoders: bytes in, plain Python data out.

Rule: knows nothing about packets, files, pandas or Spark, so it can be reused on its own; every
API fact comes from the schema table (``schema``, ``apis``, ``error_codes``). Exports the frame
decoders below; ``records`` (record batches), ``entities`` (the entityType walk) and ``apis``
(the API key registry) are imported by module.
"""

from .api import decode_data, decode_request, decode_response
from .errors import DecodeError, DecodeWarning

__all__ = ["DecodeError", "DecodeWarning", "decode_data", "decode_request", "decode_response"]
