"""kcat workloads: Debian's kcat (librdkafka 2.0.2) looping on ApiVersions, and the same kcat forced
onto 0.9-era protocol versions (Metadata v0, Produce v1 with magic-0 message sets, Fetch v1).

kcat is driven with `-d protocol`, so its stderr lists every request it wrote.
"""

from __future__ import annotations

import json
import re
import subprocess

from workloads.common import (
    LIBRDKAFKA_SENT,
    PlannedMessage,
    bootstrap,
    consumed_record,
    new_result,
    produced_record,
    requests_in_log,
    workload_parser,
    write_json,
)

LEGACY = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]


def kcat_version() -> dict:
    banner = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10).stdout
    match = re.search(r"Version (\S+) .*librdkafka (\S+?)[ )]", banner)
    return {"library": "kcat", "version": match.group(1) if match else None,
            "librdkafka": match.group(2) if match else None}


def run_kcat(args, result: dict, argv: list[str], *, timeout: float, stdin: str | None = None) -> str:
    """Run kcat against the test broker, keep its protocol log, and record the run in ground truth."""
    command = ["kcat", "-b", bootstrap(args.port), "-d", "protocol", *argv]
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout)
        stdout, stderr, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        stdout, stderr, code = exc.stdout or "", exc.stderr or "", "timeout"
        stdout, stderr = (s.decode(errors="replace") if isinstance(s, bytes) else s for s in (stdout, stderr))
    with args.log.open("a") as log:
        log.write(f"$ {' '.join(command)}\n{stderr}\n")
    errors = [line for line in stderr.splitlines() if line.startswith("% ERROR")]
    result.setdefault("kcat_runs", []).append({"argv": command, "exit": code, "errors": errors})
    return stdout


def apiversions_loop(args, result: dict) -> None:
    """`kcat -L`: tansu's ApiVersions v3 reply makes this librdkafka fail and reconnect until -m runs out."""
    run_kcat(args, result, ["-L", "-m", "3"], timeout=15)
    result["notes"].append("librdkafka 2.0.2 mis-skips the tagged fields of tansu's ApiVersions v3 reply "
                           "('Read underflow'), then reconnects and asks again: each connection carries one "
                           "ApiVersions request and its reply, then the client closes it")


def legacy(args, result: dict) -> None:
    """Metadata v0, two magic-0 produces (plain and gzip) that tansu refuses, then Fetch v1 of seeded data."""
    run_kcat(args, result, [*LEGACY, "-L", "-t", args.topic], timeout=15)
    for codec in ("none", "gzip"):
        plan = [PlannedMessage(f"legacy-{codec}-{i}".encode(), f"magic 0 message {i} ({codec})".encode(), codec)
                for i in range(2)]
        lines = "".join(f"{m.key.decode()}:{m.value.decode()}\n" for m in plan)
        run_kcat(args, result, [*LEGACY, "-P", "-t", args.topic, "-p", "0", "-K", ":", "-z", codec],
                 timeout=15, stdin=lines)
        run = result["kcat_runs"][-1]
        error = ("; ".join(run["errors"]) or f"exit {run['exit']}") if run["exit"] != 0 else None
        result["produced"] += [produced_record(m, args.topic, 0, None, acks=-1, error=error,
                                               message_format="magic 0 (Produce v1)") for m in plan]
    out = run_kcat(args, result, [*LEGACY, "-C", "-t", args.topic, "-p", "0", "-o", "0", "-c", "3", "-e", "-J"],
                   timeout=15)
    for line in out.splitlines():
        msg = json.loads(line)
        result["consumed"].append(consumed_record(
            msg["topic"], msg["partition"], msg["offset"],
            None if msg.get("key") is None else msg["key"].encode(),
            None if msg.get("payload") is None else msg["payload"].encode(), []))
    result["notes"].append("forced to broker.version.fallback=0.9.0: tansu refuses the Produce v1 requests "
                           "(error UNKNOWN_PRODUCER_ID), so those messages were not delivered")


COMMANDS = {"apiversions-loop": apiversions_loop, "legacy": legacy}


def main() -> None:
    args = workload_parser(__doc__, COMMANDS).parse_args()
    args.log.write_text("")
    result = new_result(kcat_version(), args.topic)
    COMMANDS[args.command](args, result)
    result["requests_sent"] = requests_in_log(args.log.read_text(errors="replace"), LIBRDKAFKA_SENT)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
