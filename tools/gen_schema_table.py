"""Regenerate kdissect's compact schema table from Kafka's message-definition JSON files.

Kafka keeps its protocol in ``clients/src/main/resources/common/message/*.json``. Those files
are reference data we never commit; this script reads one or more such folders and writes
the wire facts kdissect needs (names, types, version ranges, nullability, tags, defaults,
entity types, header versions) to ``kdissect/decoders/schema_table.json``.

Folders are given oldest first. A message version is taken from the newest folder that
defines it; an older folder only contributes versions the newer ones dropped (Kafka 4.0
removed many old versions), and only where its layout at that version actually differs.

    python tools/gen_schema_table.py path/to/kafka-3.9/message path/to/kafka-trunk/message
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "kdissect" / "decoders" / "schema_table.json"

# Field attributes that describe the wire (kept) — everything else (about, ignorable,
# mapKey, zeroCopy, ...) is documentation or code-generation hints for Java.
_FIELD_KEYS = {
    "name": "n",
    "type": "t",
    "versions": "v",
    "nullableVersions": "nv",
    "taggedVersions": "tv",
    "tag": "tag",
    "flexibleVersions": "fv",
    "default": "d",
    "entityType": "e",
}


def strip_comments(text: str) -> str:
    """Remove // and /* */ comments outside JSON strings (Kafka's files carry both)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1 : i + 2])
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def parse_range(spec: str | None) -> tuple[int, int] | None:
    """Kafka version range string -> inclusive (lo, hi); hi 32767 means open-ended; None for "none"."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec == "none" or spec == "":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 32767
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def in_range(spec: str | None, version: int) -> bool:
    r = parse_range(spec)
    return r is not None and r[0] <= version <= r[1]


def _normalise_default(ftype: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool | int):
        return value
    text = str(value).strip()
    if text == "null":
        return None
    if ftype == "bool":
        return text == "true"
    if ftype.startswith(("int", "uint")):
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    if ftype == "float64":
        return float(text)
    return text


def compact_fields(fields: list[dict], structs: dict[str, list[dict]]) -> list[dict]:
    """Keep only wire facts, inline commonStructs so each field tree is self-contained."""
    out = []
    for f in fields:
        c = {short: f[key] for key, short in _FIELD_KEYS.items() if key in f}
        if "d" in c:
            c["d"] = _normalise_default(f["type"], c["d"])
        if "tag" in c:
            c["tag"] = int(c["tag"])  # a few files quote it
        elem = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        sub = f.get("fields")
        if sub is None and elem in structs:
            sub = structs[elem]
        if sub is not None:
            c["f"] = compact_fields(sub, structs)
        out.append(c)
    return out


def layout_at(fields: list[dict], version: int, flexible: bool) -> list:
    """What the wire looks like at one version: used to tell whether two definitions differ."""
    out = []
    for f in fields:
        if not in_range(f.get("v"), version):
            continue
        out.append(
            (
                f["n"],
                f["t"],
                in_range(f.get("nv"), version),
                f.get("tag") if in_range(f.get("tv"), version) else None,
                flexible and not (f.get("fv") is not None and not in_range(f["fv"], version)),
                f.get("d"),
                f.get("e"),
                layout_at(f["f"], version, flexible) if "f" in f else None,
            )
        )
    return out


def load_folder(folder: Path) -> dict[str, dict]:
    """Read every message definition in a folder into compact form, keyed by name."""
    defs = {}
    for path in sorted(folder.glob("*.json")):
        raw = json.loads(strip_comments(path.read_text(encoding="utf-8")))
        structs = {s["name"]: s.get("fields", []) for s in raw.get("commonStructs", [])}
        # commonStructs may reference each other; compact_fields resolves through `structs`.
        d = {
            "type": raw["type"],
            "valid": raw["validVersions"],
            "flex": raw.get("flexibleVersions", "none"),
            "fields": compact_fields(raw.get("fields", []), structs),
        }
        if "apiKey" in raw:
            d["api_key"] = raw["apiKey"]
        if "headerVersions" in raw:
            d["header_versions"] = raw["headerVersions"]
        d["name"] = raw["name"]
        # APIs are identified by (kind, api key): Kafka renames messages (ListClientMetricsResources
        # became ListConfigResources) without changing the wire.
        key = f'{raw["type"]}:{raw["apiKey"]}' if "apiKey" in raw else raw["name"]
        defs[key] = d
    return defs


def _versions(d: dict) -> range:
    lo, hi = parse_range(d["valid"]) or (0, -1)
    return range(lo, hi + 1)


def _same_at(a: dict, b: dict, version: int) -> bool:
    fa, fb = in_range(a["flex"], version), in_range(b["flex"], version)
    return fa == fb and layout_at(a["fields"], version, fa) == layout_at(b["fields"], version, fb)


def merge(eras: list[dict[str, dict]]) -> dict[str, dict]:
    """Merge folders (oldest first) into one entry per message with version eras, named as
    the newest folder names it."""
    keys = sorted({k for e in eras for k in e})
    merged: dict[str, dict] = {}
    for name in keys:
        owners: dict[int, dict] = {}
        for defs in eras:  # newer folders overwrite older ones version by version
            if name in defs:
                for v in _versions(defs[name]):
                    owners[v] = defs[name]
        newest = next(defs[name] for defs in reversed(eras) if name in defs)
        # An old definition survives only for versions where it describes different bytes.
        for v, d in list(owners.items()):
            if d is not newest and v not in _versions(newest) and _same_at(d, newest, v):
                owners[v] = newest
        entry_eras: list[dict] = []
        for v in sorted(owners):
            d = owners[v]
            if entry_eras and entry_eras[-1]["_def"] is d and entry_eras[-1]["hi"] == v - 1:
                entry_eras[-1]["hi"] = v
            else:
                entry_eras.append({"_def": d, "lo": v, "hi": v})
        entry: dict[str, Any] = {"type": newest["type"]}
        if "api_key" in newest:
            entry["api_key"] = newest["api_key"]
        entry["versions"] = [min(owners), max(owners)] if owners else None
        if entry["type"] in ("request", "response"):
            # What the newest folder still accepts: versions outside it were removed (Kafka 4.0 removed many).
            current = parse_range(newest["valid"])
            entry["current"] = list(current) if current else None
        entry["eras"] = [
            {"versions": [e["lo"], e["hi"]], "flex": e["_def"]["flex"], "fields": e["_def"]["fields"]}
            for e in entry_eras
        ]
        entry["_header_versions"] = {
            v: owners[v].get("header_versions") for v in owners if owners[v].get("header_versions")
        }
        merged[newest["name"]] = entry
    return merged


def header_version(name: str, entry: dict, version: int, flexible: bool) -> int:
    """Kafka's rule (its message generator hard-codes the two exceptions)."""
    declared = entry["_header_versions"].get(version)
    if declared:
        for spec, hv in declared.items():
            if in_range(spec, version):
                return int(hv)
    if entry["type"] == "request":
        if entry["api_key"] == 7 and version == 0:  # ControlledShutdown v0: header without client id
            return 0
        return 2 if flexible else 1
    if entry["api_key"] == 18:  # ApiVersions responses keep header v0 so any client can read them
        return 0
    return 1 if flexible else 0


def build_table(folders: list[Path]) -> dict:
    merged = merge([load_folder(f) for f in folders])
    messages = {}
    for name, entry in merged.items():
        if entry["type"] in ("request", "response"):
            headers: dict[str, int] = {}
            for era in entry["eras"]:
                for v in range(era["versions"][0], era["versions"][1] + 1):
                    headers[str(v)] = header_version(name, entry, v, in_range(era["flex"], v))
            entry["header"] = headers
        del entry["_header_versions"]
        messages[name] = entry
    return {"format": 1, "generated_from": [f.name for f in folders], "messages": messages}


def write_table(table: dict, out: Path) -> None:
    """One message per line: compact, yet a regeneration diff shows which messages changed."""
    lines = ["{", f'"format": {table["format"]},', f'"generated_from": {json.dumps(table["generated_from"])},']
    lines.append('"messages": {')
    items = sorted(table["messages"].items())
    for i, (name, entry) in enumerate(items):
        sep = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(entry, separators=(',', ':'))}{sep}")
    lines.append("}}")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", type=Path, help="folders of Kafka message JSON, oldest first")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    for f in args.folders:
        if not f.is_dir():
            print(f"not a folder: {f}", file=sys.stderr)
            return 2
    table = build_table(args.folders)
    write_table(table, args.out)
    n = sum(1 for m in table["messages"].values() if m["type"] in ("request", "response"))
    print(f"wrote {args.out} ({n} API messages, {len(table['messages'])} definitions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
