"""Compile a resolved message (see :mod:`schema`) into a specialised decoder.

When the C extension is built, the decoder used is :mod:`program`'s schema program run by
``_native.c``; the Python code generated here is its fallback (and the whole decoder when
the extension is missing or ``KDISSECT_PURE_PYTHON=1`` is set).

Like Kafka's own generator, we turn the schema into straight-line code once per
(message, version): consecutive fixed-width fields become one ``struct`` call, arrays of
fixed-width primitives one ``unpack_from``, nested structs are inlined as loops, and the
result is built as dict literals. That is several times faster than walking the schema
tree for every message.

Each decoder comes in two builds from the same generator. The fast build keeps no
bookkeeping; when it fails, the traced build (which records the field path and offset
before every read) is run on the same bytes to say exactly where the bytes went wrong.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

from . import program
from .schema import FIXED_FORMATS, FIXED_SIZES, Field, Message, min_size
from .wire import Malformed, read_uvarint, read_uvarlong, read_varint, read_varlong

Decoder = Callable[[bytes, int, int], tuple[dict, int]]

# Readers for short arrays of fixed-width primitives, indexed by element count: replica lists,
# partition lists and the like are short, and a prepared Struct beats formatting one per array.
_ARRAY_CACHED = 64
_ARRAY_READERS = {
    code: tuple(struct.Struct(f">{n}{code}").unpack_from for n in range(_ARRAY_CACHED))
    for t, code in FIXED_FORMATS.items()
    if t != "uuid"
}
_VARINT_READERS = {"uvarint": "_uvar", "varint": "_svar", "varlong": "_svarl"}


def _uuid(raw: bytes) -> uuid.UUID:
    return uuid.UUID(bytes=raw)


class _Codegen:
    """Emits Python source for one message version (fast or traced build)."""

    def __init__(self, trace: bool) -> None:
        self.trace = trace
        self.consts: dict[str, object] = {}
        self.unpackers: dict[str, str] = {}
        self.funcs: list[list[str]] = []
        self.n = 0

    def var(self, prefix: str = "v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: object, prefix: str = "K") -> str:
        for name, existing in self.consts.items():
            if existing is value or (type(existing) is type(value) and existing == value):
                return name
        name = f"_{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name

    def unpacker(self, fmt: str) -> str:
        """Name of a constant bound to ``Struct(fmt).unpack_from`` (one call, no attribute lookup)."""
        name = self.unpackers.get(fmt)
        if name is None:
            name = self.unpackers[fmt] = self.const(struct.Struct(">" + fmt).unpack_from, "S")
        return name

    # -- bookkeeping for the traced build -------------------------------------------------
    def mark(self, out: list[str], ind: str, path: str) -> None:
        if self.trace:
            out.append(f'{ind}T[0] = f"{path}"; T[1] = p')

    # -- lengths ------------------------------------------------------------------------
    def read_len(self, out: list[str], ind: str, target: str, compact: bool, legacy_fmt: str) -> None:
        """Read a length: compact = unsigned varint minus one, else a signed big-endian int."""
        if compact:
            out.append(f"{ind}{target} = b[p] - 1; p += 1")
            out.append(f"{ind}if {target} > 126: {target}, p = _uvar(b, p - 1); {target} -= 1")
        else:
            s = self.unpacker(legacy_fmt)
            out.append(f"{ind}{target}, = {s}(b, p); p += {struct.calcsize('>' + legacy_fmt)}")

    def null_branch(self, out: list[str], ind: str, f: Field, n: str, what: str, target: str) -> None:
        """After a length read: the null case (or an error for non-nullable fields), then ``else:``."""
        out.append(f"{ind}if {n} < 0:")
        if f.nullable:
            out.append(f"{ind}    if {n} != -1: raise _Bad('negative {what} length ' + str({n}))")
            out.append(f"{ind}    {target} = None")
        else:
            out.append(
                f"{ind}    raise _Bad('null or negative {what} length ' + str({n}) + ' in a non-nullable field')"
            )
        out.append(f"{ind}else:")

    # -- values -------------------------------------------------------------------------
    def value(self, out: list[str], ind: str, f: Field, target: str, path: str) -> None:
        """Emit code that reads one value of field ``f`` (array or not) into ``target``."""
        if f.is_array:
            self.array(out, ind, f, target, path)
        else:
            self.element(out, ind, f, target, path)

    def element(self, out: list[str], ind: str, f: Field, target: str, path: str) -> None:
        elem = f.elem
        if elem in FIXED_FORMATS:
            s = self.unpacker(FIXED_FORMATS[elem])
            out.append(f"{ind}{target}, = {s}(b, p); p += {FIXED_SIZES[elem]}")
            if elem == "uuid":
                out.append(f"{ind}{target} = _uuid({target})")
        elif elem in _VARINT_READERS:
            out.append(f"{ind}{target}, p = {_VARINT_READERS[elem]}(b, p)")
        elif elem in ("string", "bytes", "records"):
            n = self.var("n")
            self.read_len(out, ind, n, f.compact, "h" if elem == "string" else "i")
            self.null_branch(out, ind, f, n, elem, target)
            out.append(f"{ind}    e = p + {n}")
            out.append(f"{ind}    if e > L: raise _Bad('{elem} of ' + str({n}) + ' bytes runs past the end')")
            if elem == "string":  # strict decoding is the fast path; bad UTF-8 is shown replaced
                out.append(f"{ind}    try: {target} = b[p:e].decode()")
                out.append(f"{ind}    except UnicodeDecodeError: {target} = b[p:e].decode('utf-8', 'replace')")
                out.append(f"{ind}    p = e")
            else:
                out.append(f"{ind}    {target} = b[p:e]; p = e")
        elif elem == "struct":
            if f.nullable:
                m = self.var("m")
                s = self.unpacker("b")
                out.append(f"{ind}{m}, = {s}(b, p); p += 1")
                out.append(f"{ind}if {m} < 0:")
                out.append(f"{ind}    {target} = None")
                out.append(f"{ind}else:")
                self.struct_body(out, ind + "    ", f, target, path)
            else:
                self.struct_body(out, ind, f, target, path)
        else:  # pragma: no cover - the schema loader only produces the types above
            raise ValueError(f"unsupported type {elem}")

    def array(self, out: list[str], ind: str, f: Field, target: str, path: str) -> None:
        n = self.var("n")
        self.read_len(out, ind, n, f.compact, "i")
        self.null_branch(out, ind, f, n, "array", target)
        body = ind + "    "
        size = min_size(f.element())
        out.append(
            f"{body}if {n} * {size} > L - p: raise _Bad('array of ' + str({n}) + ' elements cannot fit in '"
            f" + str(L - p) + ' bytes')"
        )
        if f.elem in FIXED_FORMATS and f.elem != "uuid":
            code = FIXED_FORMATS[f.elem]
            readers = self.const(_ARRAY_READERS[code], "A")
            out.append(
                f"{body}{target} = list({readers}[{n}](b, p) if {n} < {_ARRAY_CACHED} else "
                f"_unpack_from('>%d{code}' % {n}, b, p)); p += {n} * {size}"
            )
            return
        i, item, add = self.var("i"), self.var("x"), self.var("add")
        out.append(f"{body}{target} = []; {add} = {target}.append")
        out.append(f"{body}for {i} in range({n}):")
        self.element(out, body + "    ", f.element(), item, f"{path}[{{{i}}}]")
        out.append(f"{body}    {add}({item})")

    def struct_body(self, out: list[str], ind: str, f: Field, target: str, path: str) -> None:
        """Read a struct's regular fields (fusing fixed-width runs), build the dict, then its tags."""
        prefix = f"{path}." if path else ""
        names: list[tuple[str, str]] = []
        run: list[tuple[Field, str]] = []

        def flush_run() -> None:
            if not run:
                return
            fmt = "".join(FIXED_FORMATS[x.elem] for x, _ in run)
            s = self.unpacker(fmt)
            targets = ", ".join(v for _, v in run)
            out.append(f"{ind}{targets}, = {s}(b, p); p += {struct.calcsize('>' + fmt)}")
            for x, v in run:
                if x.elem == "uuid":
                    out.append(f"{ind}{v} = _uuid({v})")
            run.clear()

        for m in f.regular:
            v = self.var()
            names.append((m.key, v))
            if not self.trace and not m.is_array and m.elem in FIXED_FORMATS:
                run.append((m, v))
                continue
            flush_run()
            self.mark(out, ind, prefix + m.key)
            self.value(out, ind, m, v, prefix + m.key)
        flush_run()
        items = ", ".join(f"{k!r}: {v}" for k, v in names)  # literal keys: one constant-key map build
        out.append(f"{ind}{target} = {{{items}}}")
        if f.flexible:
            self.tagged_section(out, ind, f, target, prefix)

    def tagged_section(self, out: list[str], ind: str, f: Field, target: str, prefix: str) -> None:
        self.mark(out, ind, prefix + "_tagged_fields")
        nt, tg, sz = self.var("nt"), self.var("tg"), self.var("sz")
        out.append(f"{ind}{nt} = b[p]; p += 1")
        out.append(f"{ind}if {nt}:")  # an empty section (nearly every struct) costs one test
        ind += "    "
        out.append(f"{ind}if {nt} > 127: {nt}, p = _uvar(b, p - 1)")
        out.append(f"{ind}for _ in range({nt}):")
        body = ind + "    "
        out.append(f"{body}{tg}, p = _uvar(b, p)")
        out.append(f"{body}{sz}, p = _uvar(b, p)")
        out.append(f"{body}e = p + {sz}")
        out.append(f"{body}if e > L: raise _Bad('tagged field ' + str({tg}) + ' runs past the end')")
        branch = "if"
        # The traced build hands the caller's path (loop indices filled in) to the tagged value's function.
        where = f', f"{prefix}"' if self.trace else ""
        for m in f.tagged:
            fn = self.tagged_function(m)
            out.append(f"{body}{branch} {tg} == {m.tag}:")
            out.append(f"{body}    {target}[{m.key!r}] = {fn}(b, p, e{where})")
            branch = "elif"
        unknown = "unknown_tagged_fields"
        if branch == "if":
            out.append(f"{body}{target}.setdefault('{unknown}', []).append(({tg}, b[p:e]))")
        else:
            out.append(f"{body}else: {target}.setdefault('{unknown}', []).append(({tg}, b[p:e]))")
        out.append(f"{body}p = e")

    def tagged_function(self, f: Field) -> str:
        """A tagged value lives in its own size-delimited slot: decode it with L = slot end.

        It is a function of its own, so the enclosing loops' indices are not in its scope: the traced
        build passes the enclosing path in as ``P``.
        """
        name = self.var("_tf")
        path = "{P}" + f.key
        lines = [f"def {name}(b, p, L, {'P, ' if self.trace else ''}{_LOCALS}):"]
        v = self.var()
        self.mark(lines, "    ", path)
        self.value(lines, "    ", f, v, path)
        lines.append(f"    if p < L: raise _Bad('tagged field {f.key} has ' + str(L - p) + ' unread bytes')")
        overrun = f"'tagged field {f.key} needs ' + str(p - L) + ' bytes more than its slot'"
        lines.append(f"    if p > L: raise _Bad({overrun})")
        lines.append(f"    return {v}")
        self.funcs.append(lines)
        return name


def generate_source(msg: Message, trace: bool) -> tuple[str, dict[str, object]]:
    """Python source of ``decode(b, p, L) -> (dict, p)`` for a message version, and its constants."""
    gen = _Codegen(trace)
    body: list[str] = [f"def decode(b, p, L, {_LOCALS}):"]
    gen.struct_body(body, "    ", msg.root, "r", "")
    body.append("    return r, p")
    src = "\n".join("\n".join(fn) for fn in gen.funcs) + "\n" + "\n".join(body) + "\n"
    # Constants become default arguments, i.e. fast locals instead of global lookups.
    consts = ", ".join(f"{name}={name}" for name in gen.consts)
    return src.replace(_LOCALS, consts).replace(", ):", "):"), gen.consts


_LOCALS = "__LOCALS__"  # placeholder in generated signatures, replaced once the constants are known
_RUNTIME = {
    "_uvar": read_uvarint,
    "_uvarl": read_uvarlong,
    "_svar": read_varint,
    "_svarl": read_varlong,
    "_uuid": _uuid,
    "_unpack_from": struct.unpack_from,
    "_Bad": Malformed,
}


def _build(msg: Message, trace: bool, tracker: list | None = None) -> Decoder:
    src, consts = generate_source(msg, trace)
    namespace: dict[str, object] = dict(_RUNTIME)
    namespace.update(consts)
    if tracker is not None:
        namespace["T"] = tracker
    code = compile(src, f"<kdissect {msg.name} v{msg.version}{' traced' if trace else ''}>", "exec")
    exec(code, namespace)
    return namespace["decode"]  # type: ignore[return-value]


_PYTHON: dict[tuple[str, int], Decoder] = {}
_NATIVE: dict[tuple[str, int], Decoder] = {}
_native = program.native_module()
_fast = _NATIVE if _native is not None else _PYTHON


def python_decoder(msg: Message) -> Decoder:
    """The generated Python decoder (compiled once per message version).

    Keyed by (name, version), not by the message itself: hashing a frozen schema tree on
    every call cost more than decoding small messages.
    """
    key = (msg.name, msg.version)
    fn = _PYTHON.get(key)
    if fn is None:
        fn = _PYTHON[key] = _build(msg, trace=False)
    return fn


def native_decoder(msg: Message) -> Decoder:
    """The C interpreter running this message's program (cached); on bad bytes it hands the
    same arguments to the Python decoder, so results and errors are the Python decoder's."""
    if _native is None:
        raise RuntimeError("the native decoder extension is not available")
    key = (msg.name, msg.version)
    fn = _NATIVE.get(key)
    if fn is None:
        try:
            fn = _native.Program(program.program(msg), lambda b, p, limit: python_decoder(msg)(b, p, limit))
        except ValueError:  # a schema nested deeper than the interpreter's bound: Python only
            fn = python_decoder(msg)
        _NATIVE[key] = fn
    return fn


# Whole frames in one C call (``_native.decode_frame``): for each kind, api_key << 16 | api_version
# -> (header Program, body Program), filled as messages are first met (see api._api_messages).
FRAME_PROGRAMS: dict[str, dict[int, tuple[Decoder, Decoder]]] = {"request": {}, "response": {}}


def register_frame(kind: str, api_key: int, api_version: int, header: Message, msg: Message) -> None:
    """Let the C frame path decode this message version (when both its programs are native)."""
    if _native is None:
        return
    programs = native_decoder(header), native_decoder(msg)
    if all(isinstance(fn, _native.Program) for fn in programs):
        FRAME_PROGRAMS[kind][api_key << 16 | api_version] = programs


def _no_frame(b: object, programs: object, api_key: object, api_version: object, sized: bool) -> None:
    """The frame path when the Python decoders are selected: always leaves the frame to api.py."""
    return None


def fast_decoder(msg: Message) -> Decoder:
    """The decoder used on every message: native when the extension is loaded, else Python."""
    fn = _fast.get((msg.name, msg.version))
    if fn is None:
        fn = native_decoder(msg) if _fast is _NATIVE else python_decoder(msg)
    return fn


frame_decoder = _native.decode_frame if _native is not None else _no_frame

WALK_BAD, WALK_SPENT, WALK_UNDECIDED = -1, -2, -3  # how a walk ends that reaches no end (see _native.c)


def _no_walk(
    b: object, programs: object, api_key: int, api_version: int, start: int, end: int, budget: int
) -> tuple[int, int]:
    """The frame walk when the Python decoders are selected: always leaves the frame to them."""
    return WALK_UNDECIDED, budget


# walk_frame(b, programs, api_key, api_version, start, end, budget) -> (stop, budget left): where the
# frame's header and body would end, nothing built, a step of the budget per field and element.
frame_walker = _native.walk_frame if _native is not None else _no_walk


def native_loaded() -> bool:
    return _native is not None


def use_native(enabled: bool) -> None:
    """Choose the native or the Python decoders (tests and benchmarks compare the two)."""
    global _fast, frame_decoder, frame_walker
    _fast = _NATIVE if program.require_native(enabled) else _PYTHON
    frame_decoder = _native.decode_frame if _fast is _NATIVE else _no_frame  # type: ignore[union-attr]
    frame_walker = _native.walk_frame if _fast is _NATIVE else _no_walk  # type: ignore[union-attr]


def native_enabled() -> bool:
    return _fast is _NATIVE


_TRACED: dict[tuple[str, int], tuple[Decoder, list]] = {}


def traced_decode(msg: Message, b: bytes, p: int, limit: int) -> tuple[str, int, Exception | None]:
    """Re-run a failed decode with path tracking: (field path, offset, exception or None).

    The traced build is compiled once per message version, like the fast one: hostile input
    fails to decode all the time, and compiling on each failure made garbage expensive. Its
    tracker is reset per call (decoding is single-threaded per pipeline).
    """
    key = (msg.name, msg.version)
    cached = _TRACED.get(key)
    if cached is None:
        tracker: list = ["", p]
        cached = _TRACED[key] = (_build(msg, trace=True, tracker=tracker), tracker)
    fn, tracker = cached
    tracker[0], tracker[1] = "", p
    try:
        fn(b, p, limit)
    except Exception as exc:
        return tracker[0], tracker[1], exc
    return tracker[0], tracker[1], None
