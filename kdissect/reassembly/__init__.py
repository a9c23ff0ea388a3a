"""TCP stream reassembly: segments in, ordered byte runs and gap markers out.

Knows nothing about Kafka (see ``shared/design.md``).
"""
