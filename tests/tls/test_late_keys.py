"""A followed key log (live): keys that arrive after the handshake's packets still decrypt, and a
key log file is read on from where it was left as clients append to it."""

from __future__ import annotations

from pathlib import Path

from kdissect.engines.keylog_file import KeyLogFile
from kdissect.kafka.pipeline import KafkaPipeline
from kdissect.options import Options
from kdissect.tls.keylog import KeyLog
from tests.tls.tls_helpers import encrypted, exchanges, plaintext, run, session, summary


def test_keys_appended_after_the_hellos_still_decrypt() -> None:
    for version in ("1.2", "1.3"):
        s = session(version=version)
        keylog = KeyLog()
        pipeline = KafkaPipeline(Options(tls_keylog=keylog))
        segments = encrypted(s)
        after_hello = next(i for i, seg in enumerate(segments) if seg.payload and seg.ts_ns > s.records[1][2])
        events = []
        for i, seg in enumerate(segments):
            if i == after_hello:  # the server's hello went by without a key: the client's line comes now
                keylog.feed(s.keylog)
            events.extend(pipeline.feed(seg))
        events.extend(pipeline.finish())
        assert summary(events).decryption == "handshake", version
        assert exchanges(events) == exchanges(run(plaintext(s)))


def test_a_key_log_file_is_followed(tmp_path: Path) -> None:
    s = session(version="1.3")
    path = tmp_path / "keys.log"
    lines = s.keylog.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:20])  # a line half written
    follower = KeyLogFile(path)
    follower.read()
    assert follower.keylog.lines == 1
    path.write_bytes(b"".join(lines))
    follower.read()
    assert follower.keylog.lines == len(lines) - 1  # all but the comment
    path.unlink()
    assert follower.follow() == 0  # gone for now: nothing new, no error
