"""A TLS terminator for the real broker (tansu 0.6.0's own TLS does not work): TLS on one port,
plaintext to the broker on another, one upstream connection per client connection.

Run as ``python -m kdissect.testing.tls_terminator LISTEN_PORT BROKER_PORT CERT KEY [--tls 1.2|1.3]
[--ciphers OPENSSL_CIPHERS]``; TLS 1.3 suites come from ``OPENSSL_CONF`` (Python cannot set them).
It prints ``ready`` once listening. Both legs captured at once give a decrypted view and its
plaintext truth from the same traffic.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ssl

HOST = "127.0.0.1"
CHUNK = 1 << 16


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, ssl.SSLError, RuntimeError):
            writer.close()


async def _serve(listen: int, broker: int, context: ssl.SSLContext) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(HOST, broker)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, broker_w), _pipe(broker_r, client_w))

    server = await asyncio.start_server(handle, HOST, listen, ssl=context)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("listen", type=int)
    ap.add_argument("broker", type=int)
    ap.add_argument("cert")
    ap.add_argument("key")
    ap.add_argument("--tls", choices=("1.2", "1.3"), default="1.3")
    ap.add_argument("--ciphers")
    args = ap.parse_args()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    version = ssl.TLSVersion.TLSv1_3 if args.tls == "1.3" else ssl.TLSVersion.TLSv1_2
    context.minimum_version = context.maximum_version = version
    if args.ciphers:
        context.set_ciphers(args.ciphers)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.listen, args.broker, context))


if __name__ == "__main__":
    main()
