"""Answers that are normal protocol steps, not failures: the one registry every face reads.

The terminal summary, the report, the live console and Prometheus all ask here, so an answer is an
error in all of them or in none. Two kinds: an error code that a step of the protocol returns by
design, and a wait the client asked for (a long-poll Fetch, a JoinGroup held for a rebalance).
"""

from __future__ import annotations

# (API name, error name) -> why the answer is a normal step
EXPECTED_ERRORS: dict[tuple[str, str], str] = {
    ("JoinGroup", "MEMBER_ID_REQUIRED"): "KIP-394: the first join of a member; it joins again with the id given",
}
# API name -> what its latency waits for by design (bounded by the request's own parameters)
WAIT_ON_PURPOSE: dict[str, str] = {"Fetch": "long poll up to max_wait_ms", "JoinGroup": "rebalance"}
# A wait counts as within its bound up to this much past it (scheduling, the capture's clock).
OVERRUN_TOLERANCE_MS = 10.0


def is_expected(api_name: object, error_name: object) -> bool:
    """Whether an answer of ``api_name`` with ``error_name`` is a normal protocol step."""
    return (str(api_name), str(error_name)) in EXPECTED_ERRORS
