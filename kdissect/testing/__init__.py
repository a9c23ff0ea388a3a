"""Synthetic captures for tests and demos: TCP segments to wire frames to pcap/pcapng bytes.

``conversation`` makes realistic segment lists, ``packets`` wraps a segment in TCP, IP
and link headers, ``pcapwrite`` writes the capture file. All pure, all bytes.
"""
