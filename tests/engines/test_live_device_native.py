"""The live engine's native device read (``engines/_capture.c``) against its ctypes reference.

Two libpcap handles on the loopback device with the same filter get a copy of every packet of real
TCP traffic; one is read in C, the other through ctypes a packet at a time, and the records must be
equal, in batches of any size: the timestamps within a few milliseconds (the kernel stamps each
handle's copy on its own), every other field exactly. Needs root, as every capture does.
"""

from __future__ import annotations

import ctypes
import dataclasses
import socket
import threading
import time

import pytest

from kdissect.engines import live
from kdissect.engines.live import PcapDevice
from tests.conftest import require_root
from tests.engines.live_helpers import free_port

pytestmark = pytest.mark.skipif(live._capture is None, reason="the capture extension is not built")

MESSAGES = 300
CLOCK_SLACK_NS = 50_000_000  # between the two copies' kernel timestamps, on a loaded machine


def _traffic(port: int) -> None:
    """A client sends MESSAGES small messages (one packet each, TCP_NODELAY) and the server echoes them."""
    server = socket.create_server(("127.0.0.1", port))

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(MESSAGES):
            client.sendall(i.to_bytes(4, "big") * (1 + i % 50))
            client.recv(65536)
    thread.join(5)
    server.close()


def _drain(read, limit: int) -> list:
    out: list = []
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 1.0:
        before = len(out)
        status = read(out, limit)
        assert status >= 0
        if len(out) > before:
            quiet_since = time.monotonic()
        else:
            time.sleep(0.01)
    return out


@pytest.mark.parametrize("limit", [1, 7, 4096])
def test_native_and_ctypes_reads_give_the_same_records(limit: int) -> None:
    require_root()
    port = free_port()
    native, reference = (PcapDevice("lo", f"tcp port {port}") for _ in range(2))
    try:
        _traffic(port)
        got, expected = _drain(native._read_native, limit), _drain(reference._read_python, limit)
    finally:
        native.close()
        reference.close()
    assert len(expected) >= 2 * MESSAGES
    assert [dataclasses.replace(r, ts_ns=0) for r in got] == [dataclasses.replace(r, ts_ns=0) for r in expected]
    assert all(abs(a.ts_ns - b.ts_ns) <= CLOCK_SLACK_NS for a, b in zip(got, expected, strict=True))


def test_a_loopback_ring_takes_each_packet_once() -> None:
    """On ``lo`` the kernel offers a capture socket every packet twice (sent, then received): the device
    keeps only the received copy in the kernel (libpcap would drop the other after the ring), so what the
    ring took is what is read, and the ring holds twice the traffic."""
    require_root()
    port = free_port()
    device = PcapDevice("lo", f"tcp port {port}")
    try:
        _traffic(port)
        records = _drain(device._read_native, 4096)
        assert device._pcap.pcap_stats(device._handle, ctypes.byref(device._stat)) == 0
        taken, dropped = device._stat.ps_recv, device._stat.ps_drop
    finally:
        device.close()
    assert len(records) >= 2 * MESSAGES
    assert (taken, dropped) == (len(records), 0)
