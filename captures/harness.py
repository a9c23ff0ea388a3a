"""Processes the capture scenarios need: a tansu broker, a packet capture, and client workloads.

Every process is started by this module, remembered by its PID, and stopped by that PID in a
`finally`, so a failing scenario never leaves a broker or a capture running.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"  # the only address brokers listen on and clients are pointed at
CAPTURES_DIR = Path(__file__).resolve().parent
WORK_DIR = CAPTURES_DIR / "work"
TANSU = WORK_DIR / "bin" / "tansu"
NODE_MODULES = WORK_DIR / "node" / "node_modules"
SETTLE_SECONDS = 1.5  # lets the last packets reach the capture file before it is stopped


class HarnessError(RuntimeError):
    """A broker, capture or workload did not behave; the message says which and where its log is."""


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGTERM the process we started (by its PID), then SIGKILL if it does not go."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def port_is_free(port: int) -> bool:
    """True when nothing listens on HOST:port (TIME_WAIT leftovers of a previous run do not count)."""
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((HOST, port)) != 0


def tool_version(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    return (done.stdout or done.stderr).strip().splitlines()[0]


class Broker:
    """An in-memory tansu broker on 127.0.0.1:port; every start is an empty cluster."""

    NODE_ID = 111
    CLUSTER_ID = "tansu_cluster"

    def __init__(self, port: int, log: Path, authentication: bool = False, advertised: int | None = None) -> None:
        self.port = port
        self.log = log
        self.authentication = authentication  # SASL/SCRAM required (no users exist: every login fails)
        self.advertised = advertised or port  # behind a TLS terminator: the terminator's port
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"tcp://{HOST}:{self.port}"

    def __enter__(self) -> Broker:
        if not port_is_free(self.port):
            raise HarnessError(f"port {HOST}:{self.port} is in use; stop whatever holds it and rerun")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [str(TANSU), "broker", "--listener-url", self.url,
                 "--advertised-listener-url", f"tcp://{HOST}:{self.advertised}",
                 "--storage-engine", "memory://tansu/", *(["--authentication"] if self.authentication else [])],
                stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: "ready in" in self.log.read_text() or self.proc.poll() is not None, 15, "tansu to start")
        if self.proc.poll() is not None:
            raise HarnessError(f"tansu exited at start; see {self.log}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def create_topic(self, name: str, partitions: int) -> None:
        done = subprocess.run(
            [str(TANSU), "topic", "create", name, "--partitions", str(partitions), "--broker", self.url],
            capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise HarnessError(f"tansu topic create {name} failed: {done.stderr.strip()}")

    def describe(self) -> dict:
        return {"software": "tansu", "version": tool_version([str(TANSU), "--version"]).split()[-1],
                "address": HOST, "port": self.port, "node_id": self.NODE_ID, "cluster_id": self.CLUSTER_ID,
                "storage": "memory://tansu/", "authentication": self.authentication}


@dataclass(frozen=True)
class CaptureSpec:
    """How one capture is taken: tool, interface, link type, snap length, optional packet budget."""

    tool: str = "tcpdump"  # or "dumpcap" (writes pcapng)
    interface: str = "lo"
    link_type: str | None = None  # tcpdump -y; None keeps the interface's default
    snaplen: int = 262144
    packet_count: int | None = None  # stop after this many packets (tcpdump -c)

    @property
    def file_format(self) -> str:
        return "pcapng" if self.tool == "dumpcap" else "pcap"

    @property
    def expected_link_type(self) -> str:
        if self.link_type:
            return self.link_type
        return "LINUX_SLL2" if self.interface == "any" else "EN10MB"

    def argv(self, port: int, path: Path) -> list[str]:
        bpf = f"tcp port {port}"
        if self.tool == "dumpcap":
            return ["dumpcap", "-i", self.interface, "-f", bpf, "-s", str(self.snaplen), "-B", "32",
                    "-w", str(path)]
        argv = ["tcpdump", "-i", self.interface, "-Z", "root", "--immediate-mode", "-U", "-B", "32768",
                "-s", str(self.snaplen), "-w", str(path)]
        if self.link_type:
            argv += ["-y", self.link_type]
        if self.packet_count:
            argv += ["-c", str(self.packet_count)]
        return [*argv, bpf]


class Capture:
    """A running capture of one broker port, written to `path`."""

    READY = re.compile(r"listening on|Capturing on")

    def __init__(self, spec: CaptureSpec, port: int, path: Path, log: Path) -> None:
        self.spec, self.port, self.path, self.log = spec, port, path, log
        self.proc: subprocess.Popen | None = None
        self.launched_at = self.ready_at = self.stopped_at = 0.0

    def __enter__(self) -> Capture:
        self.path.unlink(missing_ok=True)
        self.launched_at = time.time()
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(self.spec.argv(self.port, self.path), stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.READY.search(self.log.read_text()) or self.proc.poll() is not None,
                 15, f"{self.spec.tool} to start")
        if self.proc.poll() is not None and not self.path.exists():
            raise HarnessError(f"{self.spec.tool} exited at start; see {self.log}")
        self.ready_at = time.time()
        time.sleep(0.3)  # the socket filter is attached a moment after the banner
        return self

    def wait_until_done(self, timeout: float) -> None:
        """For packet-budget captures: wait for the tool to stop by itself."""
        assert self.proc is not None
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"{self.spec.tool} did not reach its packet count in {timeout:.0f}s") from exc
        self.stopped_at = time.time()

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            time.sleep(SETTLE_SECONDS)
            stop_process(self.proc)
            self.stopped_at = time.time()

    def stats(self) -> dict:
        """The capture tool's own packet counts, as it printed them when it stopped."""
        text = self.log.read_text()
        captured = re.search(r"(\d+) packets captured|Packets captured: (\d+)", text)
        dropped = re.search(r"(\d+) packets dropped by kernel|/(\d+) \(pcap", text)

        def first(match: re.Match | None) -> int | None:
            return None if match is None else int(next(g for g in match.groups() if g is not None))

        return {"packets_captured": first(captured), "packets_dropped": first(dropped)}


class Workload:
    """A client workload process (Python module or node script) run from the captures directory."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.argv, self.log = argv, log
        self.env = os.environ | {"NODE_PATH": str(NODE_MODULES)} | (env or {})
        self.proc: subprocess.Popen | None = None

    def start(self, interactive: bool = False) -> Workload:
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                self.argv, cwd=CAPTURES_DIR, env=self.env, stderr=log, text=True,
                stdout=subprocess.PIPE if interactive else log,
                stdin=subprocess.PIPE if interactive else subprocess.DEVNULL)
        return self

    def wait_for_line(self, line: str, timeout: float) -> None:
        """Block until the workload prints `line` on stdout (it says so once its traffic is flowing)."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.proc.stdout.readline()
            if got.strip() == line:
                return
            if not got and self.proc.poll() is not None:
                break
        raise HarnessError(f"workload never printed {line!r}; see {self.log}")

    def tell(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float) -> None:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"workload {self.argv[:4]} ran over {timeout:.0f}s; see {self.log}") from exc
        if code != 0:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise HarnessError(f"workload {self.argv[:4]} exited {code}; see {self.log}\n{tail}")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)

    def run(self, timeout: float) -> None:
        self.start()
        try:
            self.finish(timeout)
        finally:
            self.stop()


def python_workload(module: str, command: str, port: int, out: Path, log: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", f"workloads.{module}", command, "--port", str(port), "--out", str(out),
            "--log", str(log), *extra]
