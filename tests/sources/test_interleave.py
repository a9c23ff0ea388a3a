"""Several inputs merged by capture time, in runs: the order is the item-by-item merge's (ties to the
input listed first, items without a time at their input's last time, inputs opened when the timeline
reaches them), and inputs that follow each other in time come out as long runs."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from kdissect.sources.interleave import merge_runs

Item = tuple[int, int, int | None]  # (input, position, time)


def _ts(item: Item) -> int | None:
    return item[2]


def _inputs(times: list[list[int | None]], firsts: list[int | None] | None = None, log: list | None = None,
            batch: int = 3):
    """(first time, opener) per input; an opener gives its items ``batch`` at a time, between empty
    batches (a chunk read that completed no record), and notes in ``log`` when it is called."""

    def opener(i: int) -> Iterator[list[Item]]:
        if log is not None:
            log.append(("open", i))
        items = [(i, n, t) for n, t in enumerate(times[i])]
        for start in range(0, len(items), batch):
            yield []
            yield items[start : start + batch]
        yield []

    firsts = firsts if firsts is not None else [next((t for t in ts if t is not None), None) for ts in times]
    return [(firsts[i], lambda i=i: opener(i)) for i in range(len(times))]


def _one_at_a_time(times: list[list[int | None]], firsts: list[int | None]) -> list[Item]:
    """The documented order, item by item without a heap: the head with the least (time, input) next,
    unless the next input to open comes first (at a tie, by its place in the list)."""
    waiting = sorted((f if f is not None else -1, i) for i, f in enumerate(firsts))
    heads: dict[int, tuple[int, list[Item]]] = {}  # input -> (its last time, what is left of it)
    out: list[Item] = []
    while heads or waiting:
        keys = [(last if items[0][2] is None else items[0][2], i) for i, (last, items) in heads.items()]
        if waiting and (not keys or waiting[0] <= min(keys)):
            i = waiting.pop(0)[1]
            if times[i]:
                heads[i] = (-1, [(i, n, t) for n, t in enumerate(times[i])])
            continue
        last, i = min(keys)
        item, *rest = heads[i][1]
        out.append(item)
        if rest:
            heads[i] = (last, rest)
        else:
            del heads[i]
    return out


def _runs(times: list[list[int | None]], most: int = 100, **kw) -> list[tuple[int, list[int]]]:
    return [(i, [n for _, n, _ in run]) for i, run in merge_runs(_inputs(times, **kw), _ts, most)]


times_st = st.lists(st.lists(st.one_of(st.none(), st.integers(0, 20)), max_size=12), min_size=1, max_size=4)


@given(times_st, st.data(), st.integers(1, 5), st.integers(1, 4))
def test_runs_keep_the_item_by_item_order(times: list[list[int | None]], data: st.DataObject, most: int,
                                          batch: int) -> None:  # fmt: skip
    firsts = data.draw(st.lists(st.one_of(st.none(), st.integers(0, 20)), min_size=len(times), max_size=len(times)))
    runs = list(merge_runs(_inputs(times, firsts, batch=batch), _ts, most))
    assert [item for _, run in runs for item in run] == _one_at_a_time(times, firsts)
    assert all(0 < len(run) <= most and {item[0] for item in run} == {i} for i, run in runs)


def test_files_that_follow_each_other_are_one_run_each() -> None:
    """(the last file, with nothing left to merge, is handed on in its reader's batches)"""
    rotated = [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))]
    assert _runs(rotated) == [(0, list(range(10))), (1, list(range(10))),
                              (2, [0, 1, 2]), (2, [3, 4, 5]), (2, [6, 7, 8]), (2, [9])]  # fmt: skip
    assert _runs(rotated, most=4)[:3] == [(0, [0, 1, 2, 3]), (0, [4, 5, 6, 7]), (0, [8, 9])]
    assert _runs(rotated, batch=10) == [(0, list(range(10))), (1, list(range(10))), (2, list(range(10)))]
    assert _runs(rotated, most=4, batch=10)[-3:] == [(2, [0, 1, 2, 3]), (2, [4, 5, 6, 7]), (2, [8, 9])]


def test_a_lone_input_is_handed_on_batch_by_batch() -> None:
    """No step per item: the runs are slices of the reader's batches, which are not walked."""

    class Unwalked(list):
        def __iter__(self):  # a merge walking the batch would call this
            raise AssertionError("walked")

    items = [(0, n, n) for n in range(7)]
    batches = [Unwalked(items[:5]), Unwalked(items[5:])]
    runs = list(merge_runs([(0, lambda: iter(batches))], _ts, 4))
    assert [(i, [n for _, n, _ in run]) for i, run in runs] == [(0, [0, 1, 2, 3]), (0, [4]), (0, [5, 6])]


def test_interleaving_inputs_switch_at_each_overtake() -> None:
    assert _runs([[1, 2, 6, 7], [3, 4, 5, 8]]) == [(0, [0, 1]), (1, [0, 1, 2]), (0, [2, 3]), (1, [3])]


def test_ties_go_to_the_input_listed_first() -> None:
    assert _runs([[5, 5, 6], [5, 6]]) == [(0, [0, 1]), (1, [0]), (0, [2]), (1, [1])]
    assert _runs([[6], [5, 6, 6]]) == [(1, [0]), (0, [0]), (1, [1, 2])]


def test_an_item_without_a_time_keeps_its_inputs_last_time() -> None:
    assert _runs([[3, None, 7], [4, None, 5]]) == [(0, [0, 1]), (1, [0, 1, 2]), (0, [2])]
    # before any time: the earliest (an input with no known first time opens first)
    assert _runs([[None, 2], [1]], firsts=[None, 1]) == [(0, [0]), (1, [0]), (0, [1])]


def test_an_input_opens_when_the_timeline_reaches_it() -> None:
    log: list = []
    for i, run in merge_runs(_inputs([[0, 1, 2, 3, 4], [2, 3]], log=log), _ts, 100):
        log.append((i, [t for _, _, t in run]))
    # (at 2, input 0 first: listed first; then input 1 opens, and its 2 comes before input 0's 3)
    assert log == [("open", 0), (0, [0, 1, 2]), ("open", 1), (1, [2]), (0, [3]), (1, [3]), (0, [4])]
