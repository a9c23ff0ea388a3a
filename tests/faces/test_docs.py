"""The README stays short, and the documentation points only inside the repository, at files that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_under_200_lines() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200


def test_every_relative_link_names_a_file_in_the_repository() -> None:
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+://", target):
                continue
            path = (doc.parent / target).resolve()
            if not path.is_relative_to(ROOT) or not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []


def test_nothing_in_the_repository_points_outside_it() -> None:
    """The project's workspace (its shared notes, design file and Kafka schemas) is not in a clone."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    outside = re.compile(r"\.\./shared\b|\bshared/(design\.md|notes|kafka-protocol)")
    hits = []
    for name in tracked.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.suffix not in {".md", ".py", ".sh", ".toml", ".txt", ".c", ""}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if outside.search(line)]
    assert hits == []
