"""The committed schema table is exactly what the generator makes from the reference definitions.

The definitions live next to the repository (``../shared/kafka-protocol/schemas``) and are
never committed; where that folder exists, regenerating must reproduce the table byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.gen_schema_table import OUT, build_table, write_table

SCHEMAS = Path(__file__).resolve().parents[2] / "shared" / "kafka-protocol" / "schemas"


@pytest.mark.skipif(not SCHEMAS.is_dir(), reason=f"reference definitions not present at {SCHEMAS}")
def test_regenerating_from_3_9_and_latest_reproduces_the_committed_table(tmp_path: Path) -> None:
    out = tmp_path / "schema_table.json"
    write_table(build_table([SCHEMAS / "3.9", SCHEMAS / "latest"]), out)
    assert out.read_bytes() == OUT.read_bytes()
