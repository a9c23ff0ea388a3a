"""32-bit TCP sequence-number arithmetic.

Sequence numbers wrap at 2**32, so "before" and "after" only make sense as the signed
distance between two numbers less than half the space apart (RFC 1982 style).
"""

from __future__ import annotations

SEQ_MASK = 0xFFFFFFFF
SEQ_HALF = 0x80000000


def seq_delta(a: int, b: int) -> int:
    """Signed distance from ``b`` to ``a`` in sequence space, in ``[-2**31, 2**31)``."""
    return ((a - b + SEQ_HALF) & SEQ_MASK) - SEQ_HALF
