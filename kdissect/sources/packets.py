"""Capture records to TCP segments: link header, IP (with reassembly), TCP.

The only state is the IP defragmenter and which unsupported link types were already
reported; the header work is done by the pure functions of ``link``, ``ip``, ``tcp``.
Hand-written struct decoding rather than dpkt: 2.1x faster per Ethernet/IPv4/TCP packet
(186k vs 87k packets/s, ``bench/bench_sources.py``), never raises on bad headers, and
keeps dpkt out of ``import kdissect``. Plain Ethernet/IPv4/TCP packets take the faster
still ``fastpath`` when no IP datagram is being reassembled.
"""

from __future__ import annotations

from kdissect.sources.defrag import Datagram, DefragLimits, Defragmenter
from kdissect.sources.fastpath import EthernetIpv4Tcp
from kdissect.sources.ip import IPPROTO_TCP, IpPacket, parse_ipv4, parse_ipv6, walk_ipv6_extensions
from kdissect.sources.link import LINK_DECODERS, LINKTYPE_ETHERNET
from kdissect.sources.native_records import record_segments
from kdissect.sources.packet_error import MalformedPacket
from kdissect.sources.segment import TcpSegment
from kdissect.sources.shapes import (
    AnomalyKind,
    CaptureRecord,
    RecordEvent,
    SourceAnomaly,
    SourceEvent,
    SourceStats,
)
from kdissect.sources.tcp_header import tcp_segment

# What a record walk may hand on besides records: a segment it made, alone or with its record.
SegmentEvent = TcpSegment | tuple[CaptureRecord, TcpSegment]


class PacketDecoder:
    """Decodes records one by one, appending ``TcpSegment``/``SourceAnomaly`` events.

    Usable on its own by a live capture that gets (link type, bytes) from a device.
    """

    def __init__(self, defrag: DefragLimits | None = None, stats: SourceStats | None = None) -> None:
        self.stats = stats if stats is not None else SourceStats()
        self._defrag = Defragmenter(defrag)
        self._records = 0  # records decoded, the clock of the packet-count fragment timeout
        self._reported_links: set[int] = set()
        self._fast = EthernetIpv4Tcp()

    def decode(self, record: CaptureRecord, out: list[SourceEvent]) -> None:
        """Append the events of one record (a segment, an anomaly, or nothing)."""
        stats = self.stats
        first = len(out)
        self._records += 1
        stats.packets += 1
        stats.captured_bytes += len(record.data)
        if len(self._defrag):
            self._finish(self._defrag.expire(record.ts_ns, self._records, out), out)
        elif record.link_type == LINKTYPE_ETHERNET:
            seg = self._fast.segment(record.ts_ns, record.data)
            if seg is not None:
                out.append(seg)
                stats.tcp_segments += 1
                return
        try:
            self._decode(record, out)
        except MalformedPacket as exc:
            out.append(SourceAnomaly(exc.kind, exc.message, record.offset, record.ts_ns))
        self._count(out, first)

    def decode_all(self, events: list[RecordEvent | SegmentEvent], out: list[SourceEvent]) -> None:
        """``decode`` each ``CaptureRecord`` of ``events`` and pass the other events on, in order; a
        segment the native record walk already made (alone, or paired with its record) is passed on as
        it is (its record was counted by the walk's owner: ``count_native``).

        Why a batch: a live engine gets its records a poll at a time; runs of common records then
        become segments in one native call (``native_records.record_segments``), while the IP
        defragmenter holds nothing (its clock and expiry need every record in order)."""
        kinds = set(map(type, events))
        if CaptureRecord not in kinds and tuple not in kinds:  # (a followed capture's walk made them all)
            out.extend(events)
            return
        index, count = 0, len(events)
        while index < count:
            event = events[index]
            kind = type(event)
            if kind is CaptureRecord:
                if not self._defrag:
                    taken = record_segments(events, index, out)  # type: ignore[arg-type]
                    if taken is not None and taken[0] > index:
                        index, records, captured = taken
                        self.count_native(records, captured)
                        continue
                self.decode(event, out)  # type: ignore[arg-type]
            elif kind is tuple:
                out.append(event[1])  # type: ignore[index]
            else:
                out.append(event)  # type: ignore[arg-type]
            index += 1

    @property
    def reassembling(self) -> bool:
        """Whether IP fragments wait for the rest of their datagram (records must come here)."""
        return len(self._defrag) > 0

    def count_native(self, records: int, captured_bytes: int) -> None:
        """Count records the native path turned into segments (``native_records``) as ``decode`` would."""
        self._records += records
        stats = self.stats
        stats.packets += records
        stats.captured_bytes += captured_bytes
        stats.tcp_segments += records

    def flush(self, out: list[SourceEvent]) -> None:
        """End of capture: emit what the incomplete IP datagrams still hold."""
        first = len(out)
        self._finish(self._defrag.flush(out), out)
        self._count(out, first)

    def _decode(self, record: CaptureRecord, out: list[SourceEvent]) -> None:
        link = LINK_DECODERS.get(record.link_type)
        if link is None:
            self._unsupported_link(record, out)
            return
        data = record.data
        version, pos = link(data)
        wire_len = record.orig_len - pos
        if version == 4:
            ip = parse_ipv4(data, pos, wire_len)
        elif version == 6:
            ip = parse_ipv6(data, pos, wire_len)
        else:
            ip = None
        if ip is None:
            self.stats.non_tcp += 1
        elif ip.fragment is None:
            out.append(tcp_segment(record.ts_ns, ip.src, ip.dst, data, ip.start, ip.end, ip.length))
        else:
            self._fragment(record, ip, out)

    def _fragment(self, record: CaptureRecord, ip: IpPacket, out: list[SourceEvent]) -> None:
        assert ip.fragment is not None
        self.stats.ip_fragments += 1
        key, frag_offset, more = ip.fragment
        captured = record.data[ip.start : ip.end]
        done = self._defrag.add(
            key, ip.proto, frag_offset, more, ip.length, captured, record.ts_ns, self._records, record.offset, out
        )
        self._finish(done, out)

    def _finish(self, datagrams: list[Datagram], out: list[SourceEvent]) -> None:
        """Decode reassembled datagrams; a given-up one without its first fragment was
        already reported and has nothing to decode."""
        for datagram in datagrams:
            if datagram.proto is None:
                continue
            try:
                self._datagram_segment(datagram, out)
            except MalformedPacket as exc:
                out.append(SourceAnomaly(exc.kind, exc.message, datagram.offset, datagram.ts_ns))

    def _datagram_segment(self, datagram: Datagram, out: list[SourceEvent]) -> None:
        assert datagram.proto is not None
        version, src, dst, _ident = datagram.key
        data, proto, start = datagram.data, datagram.proto, 0
        if version == 6:
            proto, start, nested = walk_ipv6_extensions(data, proto, 0, datagram.length)
            if nested is not None:
                raise MalformedPacket.bad("IPv6 fragment header inside a fragmented datagram")
        if proto != IPPROTO_TCP:
            self.stats.non_tcp += 1
            return
        out.append(tcp_segment(datagram.ts_ns, src, dst, data, start, len(data), datagram.length - start))

    def _unsupported_link(self, record: CaptureRecord, out: list[SourceEvent]) -> None:
        self.stats.non_tcp += 1
        if record.link_type in self._reported_links:
            return
        self._reported_links.add(record.link_type)
        out.append(
            SourceAnomaly(
                AnomalyKind.UNSUPPORTED_LINK,
                f"link type {record.link_type} is not decoded; its packets are counted as non-TCP",
                record.offset,
                record.ts_ns,
            )
        )

    def _count(self, out: list[SourceEvent], first: int) -> None:
        stats = self.stats
        for event in out[first:]:
            if type(event) is TcpSegment:
                stats.tcp_segments += 1
            else:
                stats.anomalies += 1
