"""Resource bounds of request/response pairing: pipelined requests answered in order."""

from __future__ import annotations

from pathlib import Path

from kdissect.events import Anomaly, Exchange, KafkaMessage
from kdissect.kafka.pairing import Pairer
from tests.bounds_helpers import assert_bounded, assert_linear, two_sizes
from tests.kafka.test_resource_bounds import assert_linear as assert_linear_calls


def _request(cid: int) -> KafkaMessage:
    return KafkaMessage(0, True, cid, 10, cid, cid, api_key=18, api_version=3, correlation_id=cid, body={})


def _pipelined(n: int, late: int = 0) -> None:
    """``late`` requests never answered, then ``n`` requests answered in order after all were sent."""
    pairer = Pairer(max_pending=1 << 30)
    for cid in range(-late, n):
        pairer.add_request(_request(cid))
    for cid in range(n):
        request, _, _ = pairer.take(cid)
        assert request is not None


def test_answers_in_order_cost_the_same_per_answer_however_many_wait() -> None:
    """Each answer used to copy the whole list of waiting requests (quadratic: 80k took 40 s)."""
    assert_linear_calls(_pipelined, 4_000)


def test_requests_an_answer_overtook_are_walked_past_once() -> None:
    assert_linear_calls(lambda n: _pipelined(n, late=n), 2_000)


def test_overtaken_requests_still_pair_and_are_flagged() -> None:
    pairer = Pairer()
    for cid in range(4):
        pairer.add_request(_request(cid))
    request, overtook, _ = pairer.take(2)
    assert request is not None and request.correlation_id == 2 and overtook
    assert 0 in pairer and 1 in pairer and pairer.request_for(1) is not None
    request, overtook, _ = pairer.take(0)
    assert request is not None and request.correlation_id == 0 and not overtook
    request, overtook, _ = pairer.take(1)
    assert request is not None and not overtook
    request, overtook, _ = pairer.take(3)
    assert request is not None and not overtook
    assert list(pairer.drain()) == []


def test_pending_requests_are_capped_with_one_anomaly() -> None:
    pairer = Pairer(max_pending=3)
    out = [ev for cid in range(6) for ev in pairer.add_request(_request(cid))]
    unanswered = [ev for ev in out if isinstance(ev, Exchange)]
    assert [ex.request.correlation_id for ex in unanswered] == [0, 1, 2]  # type: ignore[union-attr]
    assert [ev.kind for ev in out if isinstance(ev, Anomaly)] == ["cap"]
    assert pairer.take(0) == (None, False, [])
    assert pairer.take(5)[0] is not None


def test_pipelined_requests_through_the_cli_are_linear(tmp_path: Path) -> None:
    runs = two_sizes(tmp_path, "pipelined_requests", 10_000)
    assert_linear(runs)
    assert_bounded(runs)
    assert "cap: 1" in runs[2].stdout
