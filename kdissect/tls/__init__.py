"""The TLS stage: encrypted byte runs in, decrypted byte runs out, between reassembly and Kafka framing.

Sans-I/O like the rest of the core: :class:`~kdissect.tls.connection.TlsConnection` is a
:class:`~kdissect.reassembly.streams.RunSink` that wraps the Kafka one, reads TLS records per
direction, follows the handshake, derives record keys from a :class:`~kdissect.tls.keylog.KeyLog`
and feeds the plaintext on. It knows nothing of Kafka. Key material never leaves this package:
only names (version, suite, SNI, ALPN) and outcomes reach events.
"""

# How a connection was decrypted (the connections table's ``decryption``), and which of those mean it was.
DECRYPTIONS = ("handshake", "trial", "no key", "no handshake", "failed")
DECRYPTED = frozenset(DECRYPTIONS[:2])
