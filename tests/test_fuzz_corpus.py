"""Replay the committed fuzz corpus (seeds, and every crash or slow input fuzzing found)
through the same entry points the fuzzers drive; only documented exceptions may escape."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.targets import TARGETS

CORPUS = Path(__file__).resolve().parent.parent / "fuzz" / "corpus"


def test_every_target_has_a_corpus_and_nothing_else_does() -> None:
    assert {p.name for p in CORPUS.iterdir() if p.is_dir()} == set(TARGETS)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_corpus_replays_cleanly(target: str) -> None:
    files = sorted((CORPUS / target).iterdir())
    assert any(p.name.startswith("seed-") for p in files)
    for path in files:
        try:
            TARGETS[target](path.read_bytes())
        except Exception as exc:  # name the input so it can be replayed by hand
            raise AssertionError(f"fuzz/corpus/{target}/{path.name}: {exc!r}") from exc
