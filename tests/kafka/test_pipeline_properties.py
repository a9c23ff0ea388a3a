"""The whole Kafka core on hypothesis-built streams of valid exchanges, garbage and loss.

Invariants: nothing but events come out; every byte sent in each direction is accounted for
(part of a decoded or undecodable frame, lost in a gap, or skipped and reported); and after
garbage, decoding resumes at the next proven frame boundary.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdissect.events import Exchange
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.testing.accounting import accounted
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.kafka_frames import metadata_request, metadata_response, produce_request, produce_response

T0 = 1_700_000_000_000_000_000
garbage = st.binary(min_size=1, max_size=300)
items = st.lists(
    st.one_of(st.tuples(st.just("exchange"), st.integers(0, 1)), st.tuples(st.sampled_from([0, 1]), garbage)),
    min_size=1,
    max_size=10,
)


def build(plan: list[tuple]) -> tuple[list[tuple[int, bytes, int]], list[int]]:
    """Messages of one connection from a plan; returns them and the exchanges' correlation ids."""
    msgs, cids = [], []
    for i, item in enumerate(plan):
        t = T0 + i * 1_000_000
        if item[0] == "exchange":
            cid = 1000 + i
            cids.append(cid)
            if item[1]:
                request = produce_request(cid, records=bytes(range(i, i + 90)))
                msgs += [(0, request, t), (1, produce_response(cid), t + 1)]
            else:
                msgs += [(0, metadata_request(cid), t), (1, metadata_response(cid), t + 1)]
        else:
            msgs.append((item[0], item[1], t))
    return msgs, cids


def run(segments) -> list:
    p = KafkaPipeline()
    events = []
    for s in segments:
        events += p.feed(s)
    return events + p.finish()


def sent(msgs: list[tuple[int, bytes, int]]) -> dict[str, int]:
    return {role: sum(len(m) for d, m, _ in msgs if d == k) for k, role in enumerate(("request", "response"))}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=items, mss=st.integers(40, 1500))
def test_every_byte_is_accounted_for(plan: list[tuple], mss: int) -> None:
    msgs, _ = build(plan)
    events = run(tcp_conversation(msgs, mss=mss))
    got = accounted(events)
    assert {role: got[(0, role)] for role in ("request", "response")} == sent(msgs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=items, drops=st.sets(st.integers(0, 200), max_size=4), mss=st.integers(100, 1500))
def test_every_byte_is_accounted_for_with_loss(plan: list[tuple], drops: set[int], mss: int) -> None:
    """Lost segments show up as gaps of the right length; the bytes around them still add up."""
    msgs, _ = build(plan)
    segs = tcp_conversation(msgs, mss=mss)
    data = [i for i, s in enumerate(segs) if s.payload]
    lost = {data[d % len(data)] for d in drops}
    got = accounted(run([s for i, s in enumerate(segs) if i not in lost]))
    assert {role: got[(0, role)] for role in ("request", "response")} == sent(msgs)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=items, tail=st.integers(2, 4), mss=st.integers(60, 1500))
def test_valid_exchanges_after_garbage_decode(plan: list[tuple], tail: int, mss: int) -> None:
    """After the last garbage, once frames are proven again, the exchanges come out "ok"."""
    msgs, _ = build(plan + [("exchange", i % 2) for i in range(tail)])
    cids = [1000 + len(plan) + i for i in range(tail)]
    events = run(tcp_conversation(msgs, mss=mss))
    status = {(e.request or e.response).correlation_id: e.status for e in events if isinstance(e, Exchange)}
    # the first exchange after garbage may be what proves the boundary or be eaten by it; the rest decode
    assert [status.get(c) for c in cids[1:]] == ["ok"] * (tail - 1), status
