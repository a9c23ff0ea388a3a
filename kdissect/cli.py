"""Command line: parses arguments and hands off to the library; prints, never decodes itself."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .decoders import DecodeError, decode_request, decode_response
from .render import safe_text, to_jsonable, tree_lines


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def _read_frame(arg: str) -> bytes:
    """A frame given as hex (spaces and colons allowed) or ``@file`` (raw bytes, or hex text)."""
    if arg.startswith("@"):
        path = Path(arg[1:])
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror}") from None
        try:
            return bytes.fromhex(raw.decode("ascii").replace(":", " "))
        except (UnicodeDecodeError, ValueError):
            return raw
    try:
        return bytes.fromhex(arg.replace(":", " "))
    except ValueError:
        raise UsageError("the frame must be hex digits, or @FILE") from None


def cmd_decode(args: argparse.Namespace) -> int:
    frame = _read_frame(args.frame)
    if (args.api_key is None) != (args.api_version is None):
        raise UsageError("--api-key and --api-version go together (they select the response's request)")
    is_request = args.api_key is None
    msg = decode_request(frame) if is_request else decode_response(frame, args.api_key, args.api_version)
    if args.json:
        print(json.dumps(to_jsonable(msg), indent=2))
    else:
        for line in tree_lines(msg, limit=None if args.full else 64):
            print(line)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kdissect", description="Kafka wire-protocol dissector and analyzer.")
    ap.add_argument("--version", action="version", version=f"kdissect {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    d = sub.add_parser("decode", help="decode one Kafka frame given as hex or @file")
    d.add_argument("frame", help="hex bytes (with or without the 4-byte size prefix) or @FILE")
    d.add_argument("--api-key", type=int, help="for a response: the api key of its request")
    d.add_argument("--api-version", type=int, help="for a response: the api version of its request")
    d.add_argument("--json", action="store_true", help="print JSON (bytes as hex, UUIDs as strings)")
    d.add_argument("--full", action="store_true", help="show long byte values in full")
    d.set_defaults(func=cmd_decode)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"kdissect: {safe_text(str(exc))}", file=sys.stderr)
        return 2
    except DecodeError as exc:
        print(f"kdissect: cannot decode: {safe_text(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
