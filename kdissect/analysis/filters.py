"""A small, safe expression language over exchange columns for ``kdissect show --filter``.

``api_name == "Produce" and latency_ms > 100`` — Python syntax restricted to comparisons,
boolean logic, arithmetic, ``in`` and literals. A string compared with a timestamp column
(``request_ts >= "2026-08-22T10:15:00Z"``) is read as an ISO 8601 time, so a time window is two
comparisons. No attribute access, calls or subscripts,
so a filter can't run code; and no value it builds (a repeated or joined string or list) may
exceed :data:`MAX_BUILT` items, so a filter can't exhaust memory either.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable
from typing import Any

from kdissect.decoders.jsonable import parse_iso_ns

_CMP: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}


MAX_BUILT = 1 << 16  # longest string, bytes or list a filter may build (``'x' * n``, ``a + b``)


class FilterError(ValueError):
    """The filter expression is not valid (one line, shown to the user)."""


def compile_filter(expr: str, columns: set[str], timestamps: Iterable[str] = ()) -> Callable[[dict[str, Any]], bool]:
    """Parse once; the returned predicate evaluates a row dict. Comparisons with a missing
    (None) value are false rather than errors, so ``latency_ms > 100`` skips unanswered rows.
    ``timestamps`` are the columns holding ns since the epoch: strings compared with them are times."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise FilterError(f"bad filter: {exc.msg}") from None
    _check(tree.body, columns)
    _times(tree.body, frozenset(timestamps))

    def predicate(row: dict[str, Any]) -> bool:
        try:
            return bool(_eval(tree.body, row))
        except (TypeError, ZeroDivisionError):
            return False

    return predicate


def _check(node: ast.AST, columns: set[str]) -> None:
    if isinstance(node, ast.Name):
        if node.id not in columns and node.id not in ("True", "False", "None"):
            raise FilterError(f"unknown column {node.id!r} (known: {', '.join(sorted(columns))})")
        return
    allowed = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.BinOp, ast.Constant,
               ast.Tuple, ast.List, ast.Load, *(_CMP), *(_BIN))
    if not isinstance(node, allowed):
        raise FilterError(f"not allowed in a filter: {type(node).__name__}")
    for child in ast.iter_child_nodes(node):
        _check(child, columns)


def _times(node: ast.AST, timestamps: frozenset[str]) -> None:
    """Turn each string compared with a timestamp column into its ns since the epoch."""
    for child in ast.walk(node):
        if not isinstance(child, ast.Compare):
            continue
        operands = [child.left, *child.comparators]
        if not any(isinstance(o, ast.Name) and o.id in timestamps for o in operands):
            continue
        for o in operands:
            if isinstance(o, ast.Constant) and isinstance(o.value, str):
                ns = parse_iso_ns(o.value)
                if ns is None:
                    raise FilterError(f"not a time: {o.value!r} (ISO 8601, e.g. \"2026-08-22T10:15:00Z\")")
                o.value = ns


def _check_built_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse, before building it, a sequence longer than MAX_BUILT (``[1] * 10**12`` would allocate first)."""
    sized = (str, bytes, list)
    if isinstance(op, ast.Mult):
        seq, times = (left, right) if isinstance(left, sized) else (right, left)
        size = len(seq) * times if isinstance(seq, sized) and isinstance(times, int) else 0
    elif isinstance(op, ast.Add) and isinstance(left, sized) and isinstance(right, sized):
        size = len(left) + len(right)
    else:
        return
    if size > MAX_BUILT:
        raise FilterError(f"the filter builds a value of {size} items; at most {MAX_BUILT} are allowed")


def _eval(node: ast.AST, row: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return {"True": True, "False": False, "None": None}.get(node.id, row.get(node.id))
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, row) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, row)
        return (not v) if isinstance(node.op, ast.Not) else -v
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, row), _eval(node.right, row)
        _check_built_size(node.op, left, right)
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.Tuple | ast.List):
        return [_eval(e, row) for e in node.elts]
    if isinstance(node, ast.Compare):
        left = _eval(node.left, row)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, row)
            if (left is None or right is None) and not isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq):
                return False
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    raise FilterError(f"not allowed in a filter: {type(node).__name__}")  # pragma: no cover - _check rejects it
