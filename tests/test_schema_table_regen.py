"""The committed schema table is exactly what the generator makes from the reference definitions.

The definitions are never committed. When ``KDISSECT_KAFKA_SCHEMAS`` names a folder holding them (``3.9/``
and ``latest/``, each Kafka's ``common/message`` folder), regenerating must reproduce the committed table
byte for byte.
Everywhere (a fresh clone included) the generator is checked on a small committed fixture of made-up
definitions (``tests/fixtures/schema_regen``) that exercises each merge rule.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.gen_schema_table import OUT, build_table, write_table

SCHEMAS = Path(os.environ.get("KDISSECT_KAFKA_SCHEMAS") or "/nonexistent")
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "schema_regen"

CASES = [pytest.param([FIXTURE / "old", FIXTURE / "new"], FIXTURE / "expected_table.json", id="fixture")]
if SCHEMAS.is_dir():
    CASES.append(pytest.param([SCHEMAS / "3.9", SCHEMAS / "latest"], OUT, id="reference-definitions"))


@pytest.mark.parametrize(("folders", "committed"), CASES)
def test_regenerating_reproduces_the_committed_table(folders: list[Path], committed: Path, tmp_path: Path) -> None:
    out = tmp_path / "schema_table.json"
    write_table(build_table(folders), out)
    assert out.read_bytes() == committed.read_bytes()


def test_fixture_exercises_each_merge_rule() -> None:
    """The fixture's expected table says what each rule does, so it cannot drift into a copy of any output."""
    messages = json.loads((FIXTURE / "expected_table.json").read_text())["messages"]
    ping = messages["DemoPingRequest"]
    assert ping["versions"] == [0, 3]
    # v0 only in the older folder, and laid out differently there: kept as its own era
    assert [era["versions"] for era in ping["eras"]] == [[0, 0], [1, 3]]
    assert [f["n"] for f in ping["eras"][0]["fields"]] == ["Token", "Legacy", "Items"]
    note = {"n": "Note", "t": "string", "v": "3+", "nv": "3+", "tv": "3+", "tag": 0, "d": None}
    assert ping["eras"][1]["fields"][2] == note
    assert ping["eras"][0]["fields"][0]["d"] == 16  # hex default, comments stripped, commonStructs inlined
    assert ping["header"] == {"0": 1, "1": 1, "2": 2, "3": 2}
    assert set(messages["DemoPingResponse"]["header"].values()) == {0}  # api key 18 answers with header v0
    stop = messages["DemoStopRequest"]  # "none" upstream: versions come from the older folder
    assert stop["versions"] == [0, 1] and stop["header"] == {"0": 0, "1": 1}
    assert stop["current"] is None and ping["current"] == [1, 3]  # what the newest folder still accepts
    assert "DemoOldNameRequest" not in messages  # a rename keeps the newest name
    assert messages["DemoRenamedRequest"]["header"] == {"0": 1}  # headerVersions overrides the rule
