"""A records block's offsets in bulk (numpy, a step per column) against the batch-by-batch reference
(``RecordBlock._offsets_by_batch``): batches whose first offset is unknown (a produce request not
answered), the records' own (fetch: WIRE) or assigned by the broker, mixed in one block."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kdissect.decoders.records import RecordColumns
from kdissect.tables.blocks import WIRE, RecordBlock

firsts = st.one_of(st.none(), st.just(WIRE), st.integers(0, 2**40))
batches = st.lists(st.tuples(firsts, st.lists(st.integers(-5, 2**40), min_size=1, max_size=4)), min_size=1,
                   max_size=12)


def _columns(offsets: list[int]) -> RecordColumns:
    ints = np.array(offsets, dtype=np.int64).tobytes()
    return RecordColumns(ints, ints, *([b""] * 11))


@settings(max_examples=200, deadline=None)
@given(batches=batches)
def test_offsets_in_bulk_are_the_batch_by_batch_offsets(batches: list[tuple[int | None, list[int]]]) -> None:
    block = RecordBlock()
    for first, offsets in batches:
        block.add(_columns(offsets), first)
    values, nulls = block.numbers("offset")
    reference, reference_nulls = block._offsets_by_batch(block._ints("offset", np.int64))
    assert values.tolist() == reference.tolist()
    assert _listed(nulls) == _listed(reference_nulls)


def _listed(nulls: np.ndarray | None) -> list[bool] | None:
    return None if nulls is None else nulls.tolist()
