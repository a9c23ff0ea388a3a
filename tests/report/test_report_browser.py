"""The HTML report in a real browser: Debian's headless Chromium (installed by ``.ci/run``), driven over
the DevTools protocol with a small websocket client. It must load with no console error, no
exception and no network request, show every section and picture, and show hostile wire text as text.

``python -m tests.report.test_report_browser OUT_DIR`` writes the sample report of ``captures/`` and its
screenshot (what ``reports/`` holds and the README shows) with the same code.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import websocket

from kdissect.testing.cluster import cluster_capture
from tests.conftest import require_tool
from tests.report.test_report_formats import HOSTILE_CLIENT, HOSTILE_TOPIC, SECTIONS, kdissect

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
]
SAMPLE = Path(__file__).resolve().parents[2] / "captures" / "librdkafka-transactions.pcap"


@dataclass
class PageRun:
    """What the browser reported while loading a page."""

    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    requests: list[str] = field(default_factory=list)  # every URL the page asked for, itself included


class DevTools:
    """One page target over the Chrome DevTools Protocol (flat session mode)."""

    def __init__(self, url: str) -> None:
        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def call(self, method: str, session: bool = False, **params: Any) -> dict:
        msg_id = next(self.ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(json.loads(self.ws.recv()))

    def load(self, url: str, width: int = 1280) -> PageRun:
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("Page.loadEventFired")
        self.evaluate("1")  # let queued events (late console messages) arrive
        run = PageRun()
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                run.errors.append(json.dumps(params["exceptionDetails"])[:300])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                run.errors.append(json.dumps(params.get("args"))[:300])
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                run.errors.append(params["entry"]["text"])
            elif method == "Network.loadingFailed":
                run.errors.append(f"failed: {params.get('errorText')}")
            elif method == "Network.requestWillBeSent":
                run.requests.append(params["request"]["url"])
        return run

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int, height: int | None = None) -> None:
        """The page's top ``height`` pixels at ``width``; the whole page when no height is given."""
        height = height or self.evaluate("document.documentElement.scrollHeight")
        shot = self.call(
            "Page.captureScreenshot",
            session=True,
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))


@contextmanager
def chromium() -> Iterator[DevTools]:
    """Headless Chromium with a throw-away profile (a test without it: see ``require_tool``)."""
    require_tool("chromium")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    # Chromium's helper processes may still be writing to the profile as it is removed: the whole
    # process group is ended, and what is left of the profile afterwards is not an error of the page.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            url = None
            for line in proc.stderr:  # type: ignore[union-attr]
                found = re.search(r"DevTools listening on (ws://\S+)", line)
                if found:
                    url = found.group(1)
                    break
            assert url, "Chromium did not open its DevTools endpoint"
            tools = DevTools(url)
            try:
                yield tools
            finally:
                tools.ws.close()
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# How the page is laid out: cells outside the prose columns that take more than one line, block
# elements that overlap the one before them, and what is wider than the window (only a table's own
# box may scroll sideways, never the page).
LAYOUT = """(() => {
    const lines = el => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top))).size;
    };
    const wrapped = Array.from(document.querySelectorAll('th, td:not(.wrap)'))
        .filter(c => c.textContent.trim() && lines(c) > 1)
        .map(c => c.closest('table').querySelectorAll('th')[c.cellIndex].textContent + ': ' + c.textContent);
    const overlaps = [];
    for (const parent of document.querySelectorAll('body, main, main > section, figure, details[open]')) {
        const kids = Array.from(parent.children)
            .map(k => [k, k.getBoundingClientRect()])
            .filter(([, r]) => r.height > 0);
        for (let i = 1; i < kids.length; i++) {
            const [[above, a], [below, b]] = [kids[i - 1], kids[i]];
            if (b.top < a.bottom - 0.5) {
                overlaps.push(above.tagName + ' / ' + below.tagName + ' ' + below.textContent.slice(0, 40));
            }
        }
    }
    const wide = Array.from(document.querySelectorAll('main section, main section > *, figure img'))
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
        .map(e => e.tagName + ' ' + e.textContent.slice(0, 40));
    return {wrapped, overlaps, wide, page_width: document.documentElement.scrollWidth, window_width: window.innerWidth};
})()"""


def check_page(page: Path, screenshot: Path, width: int = 1280, height: int | None = 1800) -> dict:
    """Load a report at a window ``width``, take its screenshot (``height`` pixels, None for the whole
    page); what the page showed and how it is laid out, for the assertions."""
    with chromium() as tools:
        run = tools.load(page.resolve().as_uri(), width)
        shown = tools.evaluate("""({
            sections: Array.from(document.querySelectorAll('main > section h2')).map(h => h.textContent),
            images: Array.from(document.images).map(i => i.complete && i.naturalWidth > 0),
            scripts: document.querySelectorAll('script').length,
            handlers: document.querySelectorAll('[onerror], [onload]').length,
            text: document.body.innerText,
        })""")
        layout = tools.evaluate(LAYOUT)
        tools.screenshot(screenshot, width, height)
    return {"errors": run.errors, "requests": run.requests, **shown, "layout": layout}


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser")
    capture = cluster_capture(out / "hostile.pcap", orders=HOSTILE_TOPIC, producer_client=HOSTILE_CLIENT)
    page = out / "report.html"
    assert kdissect("report", str(capture), "-o", str(page)).returncode == 0
    return page


def test_report_opens_offline_without_errors_and_shows_hostile_text_as_text(hostile_page: Path) -> None:
    page = hostile_page
    shot = page.with_name("report.png")
    seen = check_page(page, shot)
    assert seen["errors"] == []
    fetched = [u for u in seen["requests"] if not u.startswith("data:")]  # data: URLs are inline pictures
    assert fetched == [page.resolve().as_uri()]  # the page itself, nothing else
    assert seen["sections"] == ["Capture", *SECTIONS]
    assert len(seen["images"]) == 4 and all(seen["images"])
    assert seen["scripts"] == 0 and seen["handlers"] == 0
    assert "<script>alert(1)</script>\\x1b[31mred\\u202eevil" in seen["text"]
    assert '<img src=x onerror="alert(2)">\\x1b]0;pwned\\x07' in seen["text"]
    assert "node 2 10.0.0.12:9092 (rack r2)" in seen["text"]
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and int.from_bytes(png[16:20], "big") == 1280


@pytest.mark.parametrize("width", [1400, 800])
def test_key_columns_stay_on_one_line_and_nothing_overlaps(hostile_page: Path, width: int) -> None:
    """Addresses, client ids, topics, brokers and numbers never wrap (a wide table scrolls in its own
    box); no block covers another; nothing but a table's box is wider than the window. The screenshot
    of the whole page is kept for a look."""
    shot = hostile_page.with_name(f"report-{width}.png")
    layout = check_page(hostile_page, shot, width, height=None)["layout"]
    print(f"screenshot at {width} px: {shot}")
    assert layout["wrapped"] == []
    assert layout["overlaps"] == []
    assert layout["wide"] == [] and layout["page_width"] <= layout["window_width"], layout
    assert int.from_bytes(shot.read_bytes()[16:20], "big") == width


def write_sample(out: Path) -> None:
    """The committed sample: the report of a real capture in the three formats, and its screenshot."""
    out.mkdir(parents=True, exist_ok=True)
    for fmt in ("html", "md", "json"):
        done = kdissect("report", str(SAMPLE.relative_to(Path.cwd())), "-o", str(out / f"sample-report.{fmt}"))
        assert done.returncode == 0, done.stderr
    seen = check_page(out / "sample-report.html", out / "sample-report.png")
    assert seen["errors"] == [] and len([u for u in seen["requests"] if not u.startswith("data:")]) == 1, seen


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.report.test_report_browser OUT_DIR")
    write_sample(Path(sys.argv[1]))
