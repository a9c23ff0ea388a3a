"""Make the real-traffic capture corpus: real Kafka clients against a real (tansu) broker on 127.0.0.1,
captured with tcpdump or dumpcap, each capture with a `.truth.json` of what the clients did.

    python captures/make_captures.py                 # every scenario (a few minutes)
    python captures/make_captures.py --only NAME     # one scenario (repeatable), e.g. kcat-legacy-protocol
    python captures/make_captures.py --list

Missing tools are installed by `captures/setup.sh` (run automatically unless --no-setup). Scratch files
(broker and client logs) go to `captures/work/<name>/`, which git ignores. Ground truth is what the
workloads and this script did and saw; nothing in it comes from decoding a capture.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import (
    CAPTURES_DIR,
    NODE_MODULES,
    TANSU,
    WORK_DIR,
    Broker,
    Capture,
    CaptureSpec,
    HarnessError,
    Workload,
    python_workload,
    tool_version,
)
from workloads.common import CODECS, expected_api_keys, message_plan

PYTHON_CLIENTS = {"confluent": "confluent_wl", "kafka-python": "kafka_python_wl", "aiokafka": "aiokafka_wl",
                  "kcat": "kcat_wl", "sasl": "sasl_wl"}
TRUNCATING_SNAPLEN = 200
WORKLOAD_TIMEOUT = 120.0


@dataclass(frozen=True)
class Step:
    """One workload run: which client program, which of its commands, and its options."""

    client: str  # a PYTHON_CLIENTS key or "kafkajs"
    command: str
    topic: str = "orders"
    codecs: tuple[str, ...] = CODECS
    pad: int = 0

    def argv(self, port: int, out: Path, log: Path, plan: Path) -> list[str]:
        if self.client == "kafkajs":
            return ["node", str(CAPTURES_DIR / "workloads" / "kafkajs_wl.js"), "--port", str(port), "--out",
                    str(out), "--log", str(log), "--plan", str(plan), "--topic", self.topic]
        return python_workload(PYTHON_CLIENTS[self.client], self.command, port, out, log, "--topic", self.topic,
                               "--codecs", ",".join(self.codecs), "--pad", str(self.pad))


@dataclass(frozen=True)
class Scenario:
    name: str
    port: int
    capture: CaptureSpec
    step: Step
    summary: str
    topics: tuple[tuple[str, int], ...] = ()  # made with `tansu topic create` before the capture starts
    seed: Step | None = None  # run before the capture starts
    midstream: bool = False  # start the capture only once the workload's traffic is flowing
    authentication: bool = False  # the broker requires SASL (tansu --authentication: SCRAM only, no users)
    quirks: tuple[str, ...] = field(default=())

    @property
    def file_name(self) -> str:
        return f"{self.name}.{self.capture.file_format}"


SCENARIOS = [
    Scenario(
        "librdkafka-produce-consume", 9092, CaptureSpec(), Step("confluent", "produce-consume"),
        "confluent-kafka: keyed messages with headers in every codec (one producer each), metadata, then a "
        "consumer group (session timeout 6 s) committing each message synchronously",
        topics=(("orders", 3),),
        quirks=("librdkafka also sends GetTelemetrySubscriptions (key 71)",)),
    Scenario(
        "kafka-python-produce-consume", 19092, CaptureSpec(tool="dumpcap"), Step("kafka-python", "produce-consume"),
        "kafka-python: every codec, one acks=0 producer, metadata, consumer group with a commit per message",
        topics=(("orders", 3),),
        quirks=("tansu answers the acks=0 Produce requests; a Kafka broker would not",)),
    Scenario(
        "aiokafka-produce-consume", 29092, CaptureSpec(interface="any"), Step("aiokafka", "produce-consume"),
        "aiokafka: every codec, metadata, consumer group with a commit per message; taken on the 'any' "
        "pseudo-interface (Linux cooked v2)",
        topics=(("orders", 3),),
        quirks=("aiokafka starts each connection with ApiVersions v0",)),
    Scenario(
        "kafkajs-produce-consume", 9092, CaptureSpec(interface="any", link_type="LINUX_SLL"),
        Step("kafkajs", "produce-consume", codecs=("none", "gzip")),
        "kafkajs: none and gzip (its only built-in codecs), admin metadata, consumer group with a commit per "
        "message; Linux cooked v1 link type",
        topics=(("orders", 3),)),
    Scenario(
        "kafka-python-admin", 9092, CaptureSpec(), Step("kafka-python", "admin"),
        "kafka-python admin client: create/delete topics (one duplicate create), describe topics/cluster/"
        "configs/ACLs/features, alter/list/describe/delete group offsets and groups, list offsets, "
        "create partitions (refused), delete records (tansu drops the connection)",
        quirks=("DescribeConfigs answers are empty", "kafka-python cannot parse tansu's DescribeGroups reply",
                "tansu closes the connection on DeleteRecords; the client reconnects")),
    Scenario(
        "librdkafka-admin", 19092, CaptureSpec(tool="dumpcap"), Step("confluent", "admin"),
        "confluent-kafka AdminClient: create (and duplicate create) / delete topics, describe cluster, topics "
        "and configs, incremental alter configs, list offsets, list/describe groups and group offsets, "
        "create partitions (refused client-side: tansu does not advertise CreatePartitions)"),
    Scenario(
        "librdkafka-transactions", 9092, CaptureSpec(), Step("confluent", "transactions"),
        "confluent-kafka transactions: InitProducerId, consume-transform-produce with AddPartitionsToTxn, "
        "AddOffsetsToTxn, TxnOffsetCommit, EndTxn commit; a second transaction aborted; then a "
        "read_committed consumer of the output topic",
        topics=(("orders", 3), ("payments", 2)),
        quirks=("the read_committed consumer still receives the aborted records (tansu 0.6.0)",)),
    Scenario(
        "kcat-apiversions-loop", 9092, CaptureSpec(), Step("kcat", "apiversions-loop"),
        "Debian kcat 1.7.1 (librdkafka 2.0.2) `-L -m 3`: it cannot parse tansu's ApiVersions v3 reply, so it "
        "reconnects and asks again until its 3 s metadata timeout",
        quirks=("every connection is ApiVersions request + reply + close",)),
    Scenario(
        "kcat-legacy-protocol", 19092, CaptureSpec(), Step("kcat", "legacy", topic="legacy"),
        "kcat forced to broker.version.fallback=0.9.0: Metadata v0, Produce v1 carrying magic-0 message "
        "sets (plain and gzip-wrapped) that tansu refuses, then Fetch v1 of three records seeded before "
        "the capture",
        topics=(("legacy", 1),), seed=Step("confluent", "seed", topic="legacy"),
        quirks=("no ApiVersions request at all",
                "tansu answers each Produce v1 with UNKNOWN_PRODUCER_ID (59); kcat gives up (exit 1)")),
    Scenario(
        "librdkafka-snaplen200", 39092, CaptureSpec(snaplen=TRUNCATING_SNAPLEN),
        Step("confluent", "produce-consume", codecs=("none", "lz4"), pad=1200),
        "confluent-kafka produce/consume with ~1.3 KB values (none and lz4), captured with snap length 200 so "
        "every large segment is cut",
        topics=(("orders", 3),),
        quirks=("frames longer than 200 bytes are truncated in the file (caplen < len)",)),
    Scenario(
        "librdkafka-midstream-produce", 19092, CaptureSpec(packet_count=40), Step("confluent", "stream", topic="bulk"),
        "confluent-kafka producing 100 KB values flat out (acks=1, up to 5 requests in flight); the capture "
        "starts while the stream is running and stops after 40 packets, so it begins and ends inside a "
        "connection, most likely inside a Produce request",
        topics=(("bulk", 1),),
        midstream=True,
        quirks=("no SYN: the connection was open before the capture", "no FIN: the capture stops mid-stream")),
    Scenario(
        "sasl-scram-logins", 19601, CaptureSpec(), Step("sasl", "scram-logins", codecs=("none",)),
        "kafka-python, aiokafka and confluent-kafka each log in with SCRAM-SHA-256 then SCRAM-SHA-512 to a broker "
        "started with --authentication (SaslHandshake v1, SaslAuthenticate v1/v2); it has no users, so every login "
        "ends in the server-final message e=unknown-user",
        authentication=True,
        quirks=("tansu answers e=unknown-user with error_code 0 (NONE): the failure is only in the SCRAM token",
                "kafka-python and librdkafka retry for 2.5 s: a few connections per mechanism each",
                "the password the clients send is sasl_password in this file: no output may contain it")),
]


def ensure_setup(run_setup: bool) -> None:
    """Install tools and clients with setup.sh when any is missing."""
    tools = ["tcpdump", "dumpcap", "capinfos", "tshark", "kcat", "node"]
    missing = [t for t in tools if shutil.which(t) is None]
    missing += [m for m in ("confluent_kafka", "kafka", "aiokafka") if importlib.util.find_spec(m) is None]
    missing += [str(p) for p in (TANSU, NODE_MODULES / "kafkajs") if not p.exists()]
    if not missing:
        return
    if not run_setup:
        raise HarnessError(f"missing: {', '.join(missing)}; run captures/setup.sh")
    print(f"missing {', '.join(missing)}: running setup.sh", flush=True)
    subprocess.run(["bash", str(CAPTURES_DIR / "setup.sh")], check=True, timeout=1200,
                   env=os.environ | {"PYTHON": sys.executable})


def file_facts(path: Path) -> dict:
    """The capture file's format, link type and packet count as capinfos reports them."""
    out = subprocess.run(["capinfos", "-M", "-t", "-E", "-c", "-l", str(path)], capture_output=True, text=True,
                         timeout=30).stdout
    facts = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        facts[key.strip()] = value.strip()
    return {"capinfos_file_type": facts.get("File type"), "capinfos_encapsulation": facts.get("File encapsulation"),
            "packets": int(facts.get("Number of packets", "0") or 0), "bytes": path.stat().st_size}


LINK_TYPE_NAMES = {"EN10MB": "ether", "LINUX_SLL": "linux-sll",
                   "LINUX_SLL2": "linux-sll2"}


def kafka_pdus_seen_by_tshark(path: Path, port: int) -> int:
    """Sanity check only (never ground truth): how many Kafka PDUs tshark's own dissector finds."""
    done = subprocess.run(["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-Y", "kafka",
                           "-T", "fields", "-e", "kafka.correlation_id"], capture_output=True, text=True,
                          timeout=120)
    return sum(1 for line in done.stdout.splitlines() if line.strip())


def window_of(produced: list[dict], launched_at: float, ended_at: float) -> dict:
    """Split a stream's deliveries into: surely before the capture, possibly inside it, surely after."""
    before = [r for r in produced if r["acked_at"] < launched_at]
    after = [r for r in produced if r["acked_at"] > ended_at]
    inside = [r for r in produced if launched_at <= r["acked_at"] <= ended_at]

    def span(rows: list[dict]) -> dict:
        if not rows:
            return {"count": 0}
        shifts = {r["offset"] - r["seq"] for r in rows if r["delivered"]}
        return {"count": len(rows), "seq_first": rows[0]["seq"], "seq_last": rows[-1]["seq"],
                "offset_first": rows[0]["offset"], "offset_last": rows[-1]["offset"],
                "all_delivered": all(r["delivered"] for r in rows),
                "offset_minus_seq": shifts.pop() if len(shifts) == 1 else None,
                "partitions": sorted({r["partition"] for r in rows})}

    return {"acked_before_capture_launched": span(before), "acked_after_capture_ended": span(after),
            "possibly_in_capture": span(inside),
            "explanation": "a message acknowledged before tcpdump was launched cannot be in the capture, nor "
                           "can one whose acknowledgement came after tcpdump had exited; the rest may be "
                           "(wholly or in part). Keys and values follow value_generator and each offset is seq + "
                           "offset_minus_seq, so every record is known exactly."}


def run_scenario(scenario: Scenario) -> dict:
    work = WORK_DIR / scenario.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    scratch_capture = work / scenario.file_name
    plan_path = work / "plan.json"
    step = scenario.step
    plan_path.write_text(json.dumps([m.to_json() for m in message_plan(step.client, step.codecs, pad=step.pad)]))
    truth: dict = {"capture": {}, "scenario": scenario.summary, "quirks": list(scenario.quirks)}

    with Broker(scenario.port, work / "broker.log", scenario.authentication) as broker:
        truth["broker"] = broker.describe()
        for topic, partitions in scenario.topics:
            broker.create_topic(topic, partitions)
        truth["topics_created_before_capture"] = [
            {"name": t, "partitions": p, "by": "tansu topic create"} for t, p in scenario.topics]
        if scenario.seed is not None:
            seed_out = work / "seed.json"
            Workload(scenario.seed.argv(scenario.port, seed_out, work / "seed-client.log", plan_path),
                     work / "seed.out").run(WORKLOAD_TIMEOUT)
            truth["seeded_before_capture"] = json.loads(seed_out.read_text())["produced"]

        out = work / "result.json"
        workload = Workload(step.argv(scenario.port, out, work / "client.log", plan_path), work / "workload.out")
        capture = Capture(scenario.capture, scenario.port, scratch_capture, work / "capture.log")
        try:
            if scenario.midstream:
                workload.start(interactive=True)
                workload.wait_for_line("READY", 60)
                with capture:
                    capture.wait_until_done(60)
                workload.tell("stop")
                workload.finish(WORKLOAD_TIMEOUT)
            else:
                with capture:
                    workload.start()
                    workload.finish(WORKLOAD_TIMEOUT)
        finally:
            workload.stop()

    result = json.loads(out.read_text())
    if scenario.midstream:
        result["produced_window"] = window_of(result.pop("produced"), capture.launched_at, capture.stopped_at)
        result["produced"] = []
        result["expected_api_keys"] = [0]
        result["notes"].append("requests_sent counts the whole producer run; the capture holds a 40-packet "
                               "window of it, so only Produce (key 0) is certain to appear")
    else:
        result["expected_api_keys"] = expected_api_keys(result["requests_sent"])

    facts = file_facts(scratch_capture)
    expected_encap = LINK_TYPE_NAMES[scenario.capture.expected_link_type]
    if facts["capinfos_encapsulation"] != expected_encap:
        raise HarnessError(f"{scenario.name}: link type is {facts['capinfos_encapsulation']}, wanted {expected_encap}")
    argv = scenario.capture.argv(scenario.port, Path(scenario.file_name))
    truth["capture"] = {
        "file": scenario.file_name, "format": scenario.capture.file_format,
        "link_type": scenario.capture.expected_link_type, "interface": scenario.capture.interface,
        "snaplen": scenario.capture.snaplen, "tool": tool_version([scenario.capture.tool, "--version"]),
        "command": " ".join(argv), "starts_mid_connection": scenario.midstream,
        "packet_budget": scenario.capture.packet_count, "tool_stats": capture.stats(), **facts,
    }
    codecs = {r["codec"] for r in result["produced"]} | ({"none"} if scenario.midstream else set())
    truth["codecs_used"] = sorted(codecs)
    truth |= result
    shutil.copyfile(scratch_capture, CAPTURES_DIR / scenario.file_name)
    (CAPTURES_DIR / f"{scenario.name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return truth | {"_tshark_kafka_pdus": kafka_pdus_seen_by_tshark(scratch_capture, scenario.port)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=[s.name for s in SCENARIOS], metavar="NAME")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--no-setup", action="store_true", help="fail instead of running setup.sh")
    args = parser.parse_args()
    if args.list:
        for s in SCENARIOS:
            print(f"{s.name:32} port {s.port:5}  {s.capture.file_format:6} {s.capture.expected_link_type}")
        return 0
    # SIGTERM unwinds like Ctrl-C, so brokers and captures are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ensure_setup(not args.no_setup)
    failed = []
    for scenario in [s for s in SCENARIOS if not args.only or s.name in args.only]:
        started = time.monotonic()
        try:
            truth = run_scenario(scenario)
        except HarnessError as exc:
            print(f"FAIL {scenario.name}: {exc}", flush=True)
            failed.append(scenario.name)
            continue
        cap = truth["capture"]
        print(f"ok   {cap['file']:40} {cap['bytes']:>9} B {cap['packets']:>6} pkts  port {scenario.port:<5} "
              f"{cap['link_type']:10} dropped={cap['tool_stats']['packets_dropped']} "
              f"tshark-kafka-pdus={truth['_tshark_kafka_pdus']}  {time.monotonic() - started:.1f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
