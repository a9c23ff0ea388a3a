"""Client workloads that make real Kafka traffic for the capture corpus.

Each module is run as its own process (``python -m workloads.<module>`` from ``captures/``) so that one
client's threads and sockets can never leak into another capture. A workload prints nothing the
orchestrator parses except the optional ``READY`` line; what it did is written as JSON to ``--out``.
"""
