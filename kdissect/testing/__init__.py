"""Synthetic input for tests, benchmarks and fuzzing: Kafka frames and record batches built with
the schema-driven encoders, TCP conversations, and pcap/pcapng bytes.

Rule: never imported by the runtime (``tests/test_architecture.py`` checks it). Modules:
``encoder`` and ``records_encode`` (Kafka messages and record batches), ``kafka_frames`` (ready
frames), ``conversation`` (TCP segment lists), ``packets`` and ``pcapwrite`` (link/IP/TCP headers
and capture files), ``synthetic`` (whole conversations as capture files), ``accounting`` (byte
accounting over events), ``tcp_helpers`` (scripted reassembler runs).
"""
