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


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(st.tuples(st.one_of(firsts, st.integers(2**63 - 4, 2**63 + 4)),
                                  st.lists(st.integers(-5, 2**40), max_size=3)), min_size=1, max_size=12))
def test_offsets_are_the_first_offset_plus_the_record_index_null_past_int64(
        batches: list[tuple[int | None, list[int]]]) -> None:
    """The offsets from the first offsets held as typed cells (a first offset past int64 is null there,
    as an unknown one is): each record's own (WIRE), none (unknown), or first + its index, null past
    int64; batches of no record (a table made steady) and of one (chatty traffic) spread by a slice or a
    take, those of several by numpy.repeat (numbers.spreading)."""
    block = RecordBlock()
    for first, offsets in batches:
        block.add(_columns(offsets), first)
    values, nulls = block.numbers("offset")
    expected = [own if first == WIRE else None if first is None or first + i > 2**63 - 1 else first + i
                for first, offsets in batches for i, own in enumerate(offsets)]
    shown = values.tolist() if nulls is None else [None if null else v
                                                    for v, null in zip(values.tolist(), nulls.tolist(), strict=True)]
    assert shown == expected
