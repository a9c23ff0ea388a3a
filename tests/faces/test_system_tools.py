"""The README's test command installs every system tool the suite asks for, and a missing one is a
one-line skip on a developer's machine but a failure in CI."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import conftest
from tests.conftest import SYSTEM_TOOLS, SystemTool, require_tool

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "test"


def _script_packages() -> set[str]:
    """The packages scripts/test installs: one ``need PACKAGE CHECK...`` line each."""
    found = set(re.findall(r"^need (\S+) ", SCRIPT.read_text(encoding="utf-8"), re.M))
    assert found, "scripts/test names each Debian package on a `need PACKAGE CHECK...` line"
    return found


def test_the_script_installs_every_package_the_tests_ask_for() -> None:
    wanted = {tool.package for tool in SYSTEM_TOOLS.values()}
    assert wanted <= _script_packages(), f"scripts/test does not install {sorted(wanted - _script_packages())}"


def test_every_program_a_test_looks_up_is_registered() -> None:
    """A test that looks a program up itself (``shutil.which``) must name one of SYSTEM_TOOLS, so that a
    new system tool cannot be needed without scripts/test installing it."""
    looked_up = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in (ROOT / "tests").rglob("*.py")
        for name in re.findall(r"shutil\.which\(\s*[\"']([^\"']+)[\"']", path.read_text(encoding="utf-8"))
    }
    # chromium-browser: Ubuntu's name for the chromium program; bash: what runs scripts/test itself
    known = set(SYSTEM_TOOLS) | {"chromium-browser", "bash"}
    assert {(path, name) for path, name in looked_up if name not in known} == set()


def test_the_script_is_valid_bash_and_ci_runs_it_strictly() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "export CI=true" in ci and "./scripts/test" in ci


@pytest.fixture
def missing_tool(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(SYSTEM_TOOLS, "nosuchtool", SystemTool("nosuch-package", lambda: False))
    return "nosuchtool"


def test_a_missing_tool_fails_under_ci(missing_tool: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "STRICT", True)
    with pytest.raises(pytest.fail.Exception, match=r"nosuchtool is not installed .*nosuch-package"):
        require_tool(missing_tool)


def test_a_missing_tool_is_a_one_line_skip_elsewhere(missing_tool: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "STRICT", False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_tool(missing_tool)
    assert "\n" not in str(skipped.value) and "scripts/test installs it" in str(skipped.value)


def test_the_readme_names_the_packages_the_script_installs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"system packages the tests need \(`([^`]+)`\)", readme.replace("\n", " "))
    assert found, "the README lists the system packages in one line"
    assert set(found.group(1).split()) == _script_packages()


def test_on_a_bare_machine_the_script_finds_every_package_missing(tmp_path: Path) -> None:
    """The script's checks, run where no program is on PATH (a machine with none of the packages),
    name every package, so none would be left uninstalled."""
    text = SCRIPT.read_text(encoding="utf-8")
    block = text[text.index("missing=()") : text.index("if [ ${#missing[@]} -gt 0 ]")]
    probe = tmp_path / "probe.sh"
    probe.write_text(block + 'printf "%s\\n" "${missing[@]}"\n')
    bash = shutil.which("bash")
    assert bash
    out = subprocess.run([bash, str(probe)], capture_output=True, text=True, env={"PATH": str(tmp_path / "empty")})
    assert set(out.stdout.split()) == _script_packages(), out.stderr
