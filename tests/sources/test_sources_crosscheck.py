"""Cross-checks against independent implementations.

scapy builds and writes captures the reader has never seen (so the reader is not only
tested against our own writer), and dpkt and scapy read what our writer produces.
"""

from __future__ import annotations

import dataclasses
import io
import ipaddress
from decimal import Decimal

import dpkt
import pytest
from scapy.all import (
    IP,
    TCP,
    CookedLinux,
    CookedLinuxV2,
    Dot1AD,
    Dot1Q,
    Ether,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    Loopback,
    Packet,
    Raw,
    defragment,
    fragment,
    fragment6,
    rdpcap,
    wrpcap,
    wrpcapng,
)

from kdissect.sources import decode_capture
from kdissect.sources.segment import TcpSegment
from kdissect.testing.conversation import tcp_conversation
from kdissect.testing.packets import Encapsulation
from kdissect.testing.pcapwrite import write_capture

TS = Decimal("1700000123.456789123")
PAYLOAD = bytes(range(256)) * 8
TCP_LAYER = TCP(
    sport=40001,
    dport=9092,
    seq=123456789,
    ack=987654321,
    flags="PA",
    window=4321,
    options=[("MSS", 1460), ("NOP", None), ("WScale", 7), ("Timestamp", (1, 2))],
)
IP4 = IP(src="192.168.1.10", dst="192.168.1.20", id=77, options=[b"\x94\x04\x00\x00"])
IP6 = IPv6(src="2001:db8::10", dst="2001:db8::20")
EXTS = IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting() / IPv6ExtHdrDestOpt()


def scapy_expected(pkt: Packet) -> TcpSegment:
    """The segment as scapy decodes ``pkt`` (after rebuilding it from bytes)."""
    rebuilt = pkt.__class__(bytes(pkt))
    ip = rebuilt[IP] if IP in rebuilt else rebuilt[IPv6]
    tcp = rebuilt[TCP]
    payload = bytes(tcp.payload)
    return TcpSegment(
        int(TS * 10**9), ip.src, tcp.sport, ip.dst, tcp.dport, tcp.seq, tcp.ack, int(tcp.flags), tcp.window,
        payload, len(payload),
    )  # fmt: skip


def stamped(packets: list[Packet]) -> list[Packet]:
    for p in packets:
        p.time = TS
    return packets


STACKS = {
    "ethernet-ipv4": lambda: Ether() / IP4 / TCP_LAYER / Raw(PAYLOAD),
    "vlan-ipv4": lambda: Ether() / Dot1Q(vlan=42) / IP4 / TCP_LAYER / Raw(PAYLOAD),
    "qinq-ipv6": lambda: Ether() / Dot1AD(vlan=5) / Dot1Q(vlan=6) / IP6 / TCP_LAYER / Raw(PAYLOAD),
    "ethernet-ipv6-exts": lambda: Ether() / IP6 / EXTS / TCP_LAYER / Raw(PAYLOAD),
    "sll-ipv4": lambda: CookedLinux(proto=0x0800) / IP4 / TCP_LAYER / Raw(PAYLOAD),
    "sll2-ipv6": lambda: CookedLinuxV2(proto=0x86DD) / IP6 / TCP_LAYER / Raw(PAYLOAD),
    "null-ipv4": lambda: Loopback() / IP4 / TCP_LAYER / Raw(PAYLOAD),
}


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("name", sorted(STACKS))
def test_scapy_written_packets(tmp_path, name: str, fmt: str) -> None:
    pkt = STACKS[name]()
    path = tmp_path / f"c.{fmt}"
    if fmt == "pcap":
        wrpcap(str(path), stamped([pkt]), nano=True)
    else:
        wrpcapng(str(path), stamped([pkt]))
    events, stats = decode_capture(path.read_bytes())
    expected = scapy_expected(pkt)
    if fmt == "pcapng":  # scapy writes pcapng in microseconds
        expected = dataclasses.replace(expected, ts_ns=int(TS * 10**6) * 1000)
    assert events == [expected]
    assert stats.anomalies == 0


def test_scapy_ipv4_fragments_in_any_order(tmp_path) -> None:
    whole = IP4 / TCP_LAYER / Raw(PAYLOAD)
    frags = fragment(IP(bytes(whole)), fragsize=600)
    assert len(frags) > 2
    path = tmp_path / "f.pcap"
    wrpcap(str(path), stamped([Ether() / f for f in reversed(frags)]), nano=True)
    events, stats = decode_capture(path.read_bytes())
    assert events == [scapy_expected(Ether() / whole)]
    assert stats.ip_fragments == len(frags)


def test_scapy_ipv6_fragments(tmp_path) -> None:
    whole = IP6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrFragment() / TCP_LAYER / Raw(PAYLOAD)
    frags = fragment6(IPv6(bytes(whole)), 1280)
    assert len(frags) > 1
    path = tmp_path / "f6.pcap"
    wrpcap(str(path), stamped([Ether() / f for f in frags]), nano=True)
    events, _ = decode_capture(path.read_bytes())
    assert events == [scapy_expected(Ether() / IP6 / TCP_LAYER / Raw(PAYLOAD))]


SEGMENTS = tcp_conversation(
    [(0, b"q" * 5000, 1_700_000_000_000_001_000), (1, b"r" * 300, 1_700_000_000_002_000_000)], mss=1448
)


def _dpkt_segment(ts: float, frame: bytes) -> tuple:
    eth = dpkt.ethernet.Ethernet(frame)
    ip, tcp = eth.data, eth.data.data
    return (
        round(ts * 1e6),
        ip.src,
        tcp.sport,
        ip.dst,
        tcp.dport,
        tcp.seq,
        tcp.ack,
        tcp.flags,
        tcp.win,
        bytes(tcp.data),
    )


def _ours(seg: TcpSegment) -> tuple:
    src, dst = ipaddress.ip_address(seg.src_ip).packed, ipaddress.ip_address(seg.dst_ip).packed
    fields = (seg.src_port, dst, seg.dst_port, seg.seq, seg.ack, seg.flags, seg.window, seg.payload)
    return (seg.ts_ns // 1000, src, *fields)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("vlans", [(), (9,), (1, 2)])
def test_dpkt_reads_what_we_write_and_agrees(fmt: str, vlans: tuple[int, ...]) -> None:
    data = write_capture(SEGMENTS, encap=Encapsulation(vlans=vlans), fmt=fmt)
    reader = dpkt.pcap.Reader(io.BytesIO(data)) if fmt == "pcap" else dpkt.pcapng.Reader(io.BytesIO(data))
    theirs = [_dpkt_segment(ts, frame) for ts, frame in reader]
    ours, _ = decode_capture(data)
    assert theirs == [_ours(seg) for seg in ours]
    assert len(ours) == len(SEGMENTS)


def test_scapy_reads_and_defragments_what_we_write(tmp_path) -> None:
    data = write_capture(SEGMENTS, encap=Encapsulation(fragment_size=400, fragment_order=None), nanosecond=True)
    path = tmp_path / "ours.pcap"
    path.write_bytes(data)
    packets = defragment(rdpcap(str(path)))
    theirs = [(p[IP].src, p[TCP].seq, bytes(p[TCP].payload)) for p in packets if TCP in p]
    ours, _ = decode_capture(data)
    assert theirs == [(s.src_ip, s.seq, s.payload) for s in ours]


def test_scapy_validates_our_checksums() -> None:
    for encap in (Encapsulation(ipv4_options=b"\x94\x04\x00\x00", tcp_options=b"\x02\x04\x05\xb4"), Encapsulation()):
        frame = write_capture(SEGMENTS[3:4], encap=encap)[40:]
        pkt = Ether(frame)
        ip_sum, tcp_sum = pkt[IP].chksum, pkt[TCP].chksum
        del pkt[IP].chksum, pkt[TCP].chksum
        again = Ether(bytes(pkt))
        assert (again[IP].chksum, again[TCP].chksum) == (ip_sum, tcp_sum)
    six = tcp_conversation([(0, b"v6" * 99, 10**18)], client=("fd00::1", 5), server=("fd00::2", 6))[3]
    frame = write_capture([six], encap=Encapsulation(ipv6_extensions=(60,)))[40:]
    pkt = Ether(frame)
    tcp_sum = pkt[TCP].chksum
    del pkt[TCP].chksum
    assert Ether(bytes(pkt))[TCP].chksum == tcp_sum
