"""Table columns as Arrow tables, for Parquet: built straight from the sink's column lists.

The command line writes Parquet through here without importing pandas (a third of a short
run's time went to loading it). The schema is fixed per table, so a table written in pieces
has one schema whatever each piece holds, and it carries the metadata pandas writes itself,
so ``pandas.read_parquet`` gives back the dtypes of :mod:`kdissect.tables.frames`.

A small table is made without numpy while the process has not loaded it (:func:`_listed`): the
command line loads pyarrow without its numpy bridge (``kdissect.lazy.import_without``), so an
exchanges run on a record-heavy capture never pays for numpy (a quarter of that run's instructions).
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from itertools import accumulate, chain, compress, repeat
from operator import is_, is_not, itemgetter
from typing import Any

import pyarrow as pa

from ..lazy import lazy_module
from ..native import native_module
from .blocks import RecordBlock, ends_of
from .columns import NULLABLE, TABLES, Parts, Runs, Typed, cells, end_to_end
from .numbers import NUMPY_TYPES, PYTHON_ROWS, joined_numbers, narrowed, number_arrays, spread_rows, spreading

np = lazy_module("numpy")  # not for a small table while nothing else has loaded it (_listed)
_native_tables = native_module("tables._native")

_TYPES = {
    "int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(), "int8": pa.int8(),
    "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
    "category": pa.dictionary(pa.int32(), pa.string()), "timestamp": pa.timestamp("ns", tz="UTC"),
    "bytes": pa.binary(), "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
}  # fmt: skip

# abstract type -> (pandas_type, numpy_type) as pandas records them in Parquet metadata
_PANDAS_TYPES = {
    "int64": ("int64", "Int64"), "int32": ("int32", "Int32"), "int16": ("int16", "Int16"), "int8": ("int8", "Int8"),
    "float64": ("float64", "Float64"), "bool": ("bool", "boolean"), "string": ("unicode", "string"),
    "category": ("categorical", "int8"), "timestamp": ("datetimetz", "datetime64[ns]"),
    "bytes": ("bytes", "object"), "headers": ("list[object]", "object"),
}  # fmt: skip


@cache
def arrow_schema(table: str) -> pa.Schema:
    """The table's Arrow schema (categories as int32-indexed dictionaries, headers as key/value
    structs), without the pandas metadata."""
    return pa.schema([(name, _TYPES[kind]) for name, kind in TABLES[table]])


def to_arrow(table: str, columns: Mapping[str, list[Any] | Runs | Parts]) -> pa.Table:
    """Columns (values per column name, None for null; timestamps as integer ns since the epoch)
    as an Arrow table of the table's schema."""
    arrays = None if "numpy" in sys.modules else _listed(table, columns)
    if arrays is None:
        counts: dict[int, Callable[[np.ndarray], np.ndarray] | slice | None] = {}  # per runs' counts list
        arrays = [_repeated(kind, column, counts) if isinstance(column := columns[name], Runs)
                  else _array(kind, column) for name, kind in TABLES[table]]  # fmt: skip
    schema = arrow_schema(table).with_metadata({b"pandas": _pandas_metadata(table, arrays)})
    return pa.Table.from_arrays(arrays, schema=schema)


def _listed(table: str, columns: Mapping[str, list[Any] | Runs | Parts]) -> list[pa.Array] | None:
    """The table's arrays converted by pyarrow from the cells as Python values, no numpy: for a
    process that has not loaded numpy, so its pyarrow has no numpy bridge (pyarrow loads numpy
    whenever it can) and ``pa.array`` does not import pandas to probe its argument either. None for
    the numpy path, which is the rule: a large table (past ``PYTHON_ROWS``), rows held in record
    blocks, headers, or a cell pyarrow reads otherwise than that path (a bool given as 0/1, text
    that is not ``str``, a number out of its column's range)."""
    if any(kind == "headers" for _, kind in TABLES[table]):
        return None
    held = [columns[name] for name, _ in TABLES[table]]
    if any(isinstance(c, Parts) and any(type(p) is tuple for p in c.parts) for c in held):
        return None
    first = cells(held[0])  # (every table has columns; the others are expanded only for a small table)
    if len(first) > PYTHON_ROWS:
        return None
    listed = [first, *map(cells, held[1:])]
    for (_, kind), values in zip(TABLES[table], listed, strict=True):
        if kind in ("string", "category") and not all(type(v) is str for v in values if v is not None):
            return None  # (pa.array takes bytes as UTF-8 text; the numpy path shows them as str() does)
    try:
        return [_listed_dictionary(values) if kind == "category" else pa.array(values, _TYPES[kind])
                for (_, kind), values in zip(TABLES[table], listed, strict=True)]  # fmt: skip
    except (pa.ArrowException, TypeError, ValueError, OverflowError):  # (UnicodeEncodeError: a ValueError)
        return None


def _listed_dictionary(values: list[Any]) -> pa.DictionaryArray:
    codes, distinct = _code_list(values)
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(distinct, pa.string()))


def with_pandas_metadata(table: str, data: pa.Table) -> pa.Table:
    """``data`` (the table's columns, in order, as built here) with the schema :func:`to_arrow` gives."""
    arrays = data.columns
    return pa.Table.from_arrays(arrays, schema=arrow_schema(table).with_metadata(
        {b"pandas": _pandas_metadata(table, arrays)}))


def _array(kind: str, column: list[Any] | Runs | Parts) -> pa.Array | pa.ChunkedArray:
    if isinstance(column, Runs):
        return _repeated(kind, column, {})
    if isinstance(column, Parts) and kind == "category":  # one dictionary for the whole column
        return _dictionary(tuple(column.lists()))
    if isinstance(column, Parts) and kind in NUMPY_TYPES and all(type(p) is not tuple for p in column.parts):
        return _packed(kind, *joined_numbers(kind, column.parts))  # lists and typed arrays: one array
    if isinstance(column, Parts) and kind == "string" and all(type(p) is list for p in column.parts):
        return _binary(_TYPES[kind], tuple(column.parts))  # the lists' cells end to end: one array
    if isinstance(column, Parts):
        chunks = [c for part in column.parts
                  for c in _chunks(_array(kind, part) if isinstance(part, list) else _block_array(kind, *part))]
        return chunks[0] if len(chunks) == 1 else pa.chunked_array(chunks, type=_TYPES[kind])  # fmt: skip
    if kind in NUMPY_TYPES:
        return _numbers(kind, column)
    if kind == "category":
        return _dictionary(column)
    if kind == "headers":
        return _headers(column)
    return _binary(_TYPES[kind], column)


# Arrays are assembled from buffers, never through ``pa.array``: that function imports pandas
# whenever it is installed (to ask whether its argument is a pandas object).
_MAX_BINARY = 2**31 - 1  # a binary/string array's int32 offsets reach this far; longer columns are chunked


def _numbers(kind: str, values: list[Any]) -> pa.Array:
    """Numbers, booleans and timestamps (integer ns), None for null; values outside the column's
    range are null (see ``number_arrays``)."""
    return _packed(kind, *number_arrays(kind, values))


def _packed(kind: str, data: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    length = len(data)
    if kind == "bool":
        data = np.packbits(data, bitorder="little")
    return _fixed(_TYPES[kind], length, data, nulls)


def _repeated(kind: str, runs: Runs, arrays: dict[int, Callable[[np.ndarray], np.ndarray] | slice | None]
              ) -> pa.Array | pa.ChunkedArray:  # fmt: skip
    """A column of runs: each run's value converted once, then spread to its rows by numpy (Arrow's
    ``take`` would load ``pyarrow.compute``, which costs more). ``arrays``: the counts lists seen so far
    (by id: the columns hold them), each turned once into the spreading every column sharing it takes
    (:func:`~.numbers.spreading`)."""
    key = id(runs.counts)
    if key not in arrays:
        arrays[key] = spreading(np.fromiter(runs.counts, dtype=np.int64, count=len(runs.counts)))
    rows = arrays[key]

    def spread(data: np.ndarray, nulls: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        return spread_rows(rows, data), None if nulls is None else spread_rows(rows, nulls)

    if kind in NUMPY_TYPES:
        values = runs.values
        if type(values) is bytearray:
            return _packed(kind, *spread(*narrowed(kind, Typed(values, NULLABLE))))
        if type(rows) is slice:  # (the runs with rows alone: the empty run of a table made steady is None,
            return _packed(kind, *number_arrays(kind, values[rows]))  # which would make this a pass per run)
        return _packed(kind, *spread(*number_arrays(kind, values)))
    if kind == "category":
        codes, nulls, distinct = _codes(runs.values)
        return pa.DictionaryArray.from_arrays(_packed("int32", *spread(codes, nulls)), _binary(pa.string(), distinct))
    return _array(kind, runs.expand())


def _fixed(arrow_type: pa.DataType, length: int, data: np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    return pa.Array.from_buffers(arrow_type, length, [_validity(nulls), pa.py_buffer(data)])


def _validity(nulls: np.ndarray | None) -> pa.Buffer | None:
    return None if nulls is None or not nulls.any() else pa.py_buffer(np.packbits(~nulls, bitorder="little"))


def _binary(arrow_type: pa.DataType, values: list[Any] | tuple[list[Any], ...]) -> pa.Array | pa.ChunkedArray:
    """Bytes (or, for a string type, text) values, None for null, given as a list or as the lists of a
    column's parts (a tuple: their cells end to end); chunked past int32 offsets."""
    text = arrow_type == pa.string()
    found = None if _native_tables is None else _native_tables.spans(values, text)  # (tables/_spans.c)
    if found is not None:  # (the loops below, in one C pass)
        data, ends, nulls = found
        return _spans(arrow_type, None if nulls is None else np.frombuffer(nulls, dtype=np.bool_),
                      np.frombuffer(ends, dtype=np.int64), data)  # fmt: skip
    values = _joined(values)
    if None not in values:
        data, sizes = _utf8_joined(values) if text else (b"".join(values), map(len, values))
        ends = array("q", accumulate(sizes, initial=0))  # a C loop, three times numpy.fromiter's speed here
        return _spans(arrow_type, None, np.frombuffer(ends, dtype=np.int64), data)
    # nulls: the present cells joined, their sizes placed among the nulls' zeros (no Python step per cell)
    nulls = np.fromiter(map(is_, values, repeat(None)), dtype=np.bool_, count=len(values))
    present = list(compress(values, map(is_not, values, repeat(None))))
    data, sizes = _utf8_joined(present) if text else (b"".join(present), map(len, present))
    lengths = np.zeros(len(values) + 1, dtype=np.int64)
    lengths[1:][~nulls] = np.frombuffer(array("q", sizes), dtype=np.int64)
    return _spans(arrow_type, nulls, np.cumsum(lengths), data)


def _spans(arrow_type: pa.DataType, nulls: np.ndarray | None, ends: np.ndarray, data: bytes | memoryview
           ) -> pa.Array | pa.ChunkedArray:  # fmt: skip
    """A binary or string array of the cells ending at ``ends`` (int64, after a leading 0) in
    ``data``; chunked past int32 offsets."""
    n = len(ends) - 1
    if ends[-1] > _MAX_BINARY and n > 1:
        view = memoryview(data)
        parts = [_spans(arrow_type, None if nulls is None else nulls[a:b], ends[a : b + 1] - ends[a],
                        view[ends[a] : ends[b]]) for a, b in ((0, n // 2), (n // 2, n))]  # fmt: skip
        return pa.chunked_array([chunk for part in parts for chunk in _chunks(part)], type=arrow_type)
    offsets = ends.astype(np.int32)
    return pa.Array.from_buffers(arrow_type, n, [_validity(nulls), pa.py_buffer(offsets), pa.py_buffer(data)])


def _utf8_joined(texts: list[Any]) -> tuple[bytes, Iterable[int]]:
    """The texts' UTF-8 bytes end to end, and each one's byte length. All-ASCII text (header
    keys, names, addresses) is encoded in one call, its byte lengths being its lengths."""
    try:
        joined = "".join(texts)
    except TypeError:  # not all str: each is shown as text
        joined = None
    if joined is not None and joined.isascii():
        return joined.encode("ascii"), map(len, texts)
    encoded = [(t if isinstance(t, str) else str(t)).encode("utf-8", "replace") for t in texts]
    return b"".join(encoded), map(len, encoded)


def _chunks(array: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return array.chunks if isinstance(array, pa.ChunkedArray) else [array]


def _joined(values: list[Any] | tuple[list[Any], ...]) -> list[Any]:
    """A column's cells as one list (given as the lists of its parts: a tuple)."""
    return end_to_end(values) if type(values) is tuple else values  # type: ignore[return-value]


def _dictionary(values: list[Any] | tuple[list[Any], ...]) -> pa.DictionaryArray:
    """A category column (a list, or its parts' lists: a tuple): int32 codes into the distinct values,
    in order of first appearance."""
    codes, nulls, distinct = _codes(values)
    return pa.DictionaryArray.from_arrays(_packed("int32", codes, nulls), _binary(pa.string(), distinct))


def _codes(values: list[Any] | tuple[list[Any], ...]) -> tuple[np.ndarray, np.ndarray | None, list[Any]]:
    """A category column's int32 codes (0 where null), its nulls (None: none) and its distinct values
    (``values``: a list, or its parts' lists, a tuple)."""
    if _native_tables is not None:  # (tables/_codes.c: the loop below, in C, over the parts as they are)
        codes, nulls, distinct = _native_tables.codes(values)
        return (np.frombuffer(codes, dtype=np.int32), None if nulls is None else np.frombuffer(nulls, dtype=np.bool_),
                distinct)
    values = _joined(values)
    if values.count(None) == len(values):  # (a records table's control types, mostly)
        return (*number_arrays("int32", values), [])
    codes, distinct = _code_list(values)
    return (*number_arrays("int32", codes), distinct)


def _code_list(values: list[Any]) -> tuple[list[int | None], list[Any]]:
    """A category column's codes (None where null) and its distinct values, in order of first appearance."""
    index: dict[Any, int] = {}
    return [None if v is None else index.setdefault(v, len(index)) for v in values], list(index)


def _headers(values: list[Any]) -> pa.Array:
    """Record headers: per record a list of (key, value) pairs, or None."""
    nulls = np.fromiter((h is None for h in values), dtype=np.bool_, count=len(values)) if None in values else None
    present = values if nulls is None else [h if h is not None else () for h in values]
    pairs = list(chain.from_iterable(present))
    keys, data = list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))  # (zip(*pairs) is far slower)
    ends = np.frombuffer(array("q", accumulate(map(len, present), initial=0)), dtype=np.int64)
    mask = _packed("bool", nulls, None) if nulls is not None else None
    return _header_lists(ends, _binary(pa.string(), keys), _binary(pa.binary(), data), mask)


def _header_lists(ends: np.ndarray, keys: pa.Array, values: pa.Array, mask: pa.Array | None = None) -> pa.Array:
    """The headers column from its records' ends in the header list (int64, after a leading 0)
    and the headers' keys and values."""
    struct = pa.StructArray.from_arrays([keys, values], fields=list(_TYPES["headers"].value_type))
    offsets = ends.astype(np.int32)
    return pa.ListArray.from_arrays(
        _fixed(pa.int32(), len(offsets), offsets, None), struct, type=_TYPES["headers"], mask=mask
    )


def _block_array(kind: str, block: RecordBlock, name: str) -> pa.Array | pa.ChunkedArray:
    """A per-record column of the records table straight from a block's buffers."""
    if kind == "headers":
        return _header_lists(ends_of(block.header_counts()), _payload_array(pa.string(), block, "header_key"),
                             _payload_array(pa.binary(), block, "header_value"))  # fmt: skip
    if kind == "bytes":
        return _payload_array(pa.binary(), block, name)
    values, nulls = block.numbers(name)
    return _fixed(_TYPES[kind], len(values), values, nulls)


def _payload_array(arrow_type: pa.DataType, block: RecordBlock, name: str) -> pa.Array | pa.ChunkedArray:
    lengths, data = block.binary(name)
    nulls = lengths < 0
    return _spans(arrow_type, nulls if nulls.any() else None, ends_of(lengths), data)


def _pandas_metadata(table: str, arrays: list[pa.Array | pa.ChunkedArray]) -> bytes:
    """What ``pandas.DataFrame.to_parquet`` would record for this table's dtypes."""
    columns = []
    for (name, kind), column in zip(TABLES[table], arrays, strict=True):
        pandas_type, numpy_type = _PANDAS_TYPES[kind]
        meta: dict[str, Any] | None = None
        if kind == "timestamp":
            meta = {"timezone": "UTC"}
        elif kind == "category":
            chunks = _chunks(column)
            meta = {"num_categories": max((len(c.dictionary) for c in chunks), default=0), "ordered": False}
        columns.append(
            {"name": name, "field_name": name, "pandas_type": pandas_type, "numpy_type": numpy_type, "metadata": meta}
        )
    return json.dumps(
        {
            "index_columns": [],
            "column_indexes": [],
            "columns": columns,
            "attributes": {},
            "creator": {"library": "pyarrow", "version": pa.__version__},
        }
    ).encode()
