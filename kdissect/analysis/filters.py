"""A small, safe expression language over exchange columns for ``kdissect show --filter``.

``api_name == "Produce" and latency_ms > 100`` — Python syntax restricted to comparisons,
boolean logic, arithmetic, ``in`` and literals. A string compared with a timestamp column
(``request_ts >= "2026-08-22T10:15:00Z"``) is read as an ISO 8601 time, so a time window is two
comparisons; comparing a column with a value of another kind (``request_ts >= 5``) is refused before
any row is read, as a mistake that would otherwise match everything or nothing. No attribute access,
calls or subscripts,
so a filter can't run code; and no value it builds (a repeated or joined string or list) may
exceed :data:`MAX_BUILT` items, so a filter can't exhaust memory either.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
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
    """The filter expression is not valid: one line saying what and why, in the user's terms, and
    where (``offset``, a character index into ``expr``) when it is one place of the expression."""

    def __init__(self, message: str, expr: str | None = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.expr, self.offset = expr, offset

    def pointer(self) -> list[str]:
        """The expression and a caret under the place at fault (nothing when there is no one place)."""
        if self.expr is None or self.offset is None:
            return []
        return [self.expr, " " * self.offset + "^"]


ALLOWED = ("column names, numbers, \"strings\", [lists], == != < <= > >= in, not in, is None, "
           "and or not, + - * / %, (...)")
# What the user wrote, named in their terms, for the constructs a filter refuses.
_REFUSED = {
    ast.Call: "calling a function", ast.Attribute: "attribute access (a.b)", ast.Subscript: "indexing (a[i])",
    ast.Lambda: "lambda", ast.IfExp: "if/else", ast.NamedExpr: ":=", ast.Dict: "a {dict}", ast.Set: "a {set}",
    ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.JoinedStr: "an f-string", ast.Starred: "*", ast.FloorDiv: "//",
    ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.Invert: "~", ast.UAdd: "unary +", ast.MatMult: "@",
}
# A column's type (tables/columns.py) as the filter language sees it; "list": the topic names.
_KINDS = {"timestamp": "time", "category": "text", "string": "text", "bool": "true/false", "list": "list"}
_KIND_WORDS = {"number": "a number", "text": "text", "time": "a time", "true/false": "true/false", "list": "a list"}


def column_kind(column_type: str) -> str:
    """The filter's kind of a column type: number, text, time, true/false or list."""
    return _KINDS.get(column_type, "number" if column_type.startswith(("int", "float")) else "text")


def compile_filter(expr: str, columns: Mapping[str, str]) -> Callable[[dict[str, Any]], bool]:
    """Parse and type-check once; the returned predicate evaluates a row dict. ``columns`` maps each
    column to its type (``tables.columns`` types, or ``list``). Comparisons with a missing (None)
    value are false rather than errors, so ``latency_ms > 100`` skips unanswered rows. Strings
    compared with a time column are ISO 8601 times; any other mix of kinds is refused here."""
    text = expr.strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        # The parser points at the start when the expression just stops: the end is where more was due.
        offset = len(text) if not exc.offset or exc.offset <= 1 else min(exc.offset - 1, len(text))
        raise FilterError(f"{exc.msg}; a filter uses {ALLOWED}", text, offset) from None
    kinds = {name: column_kind(kind) for name, kind in columns.items()}
    _check(tree.body, kinds, text)
    _check_kinds(tree.body, kinds, text)
    _times(tree.body, frozenset(name for name, kind in kinds.items() if kind == "time"), text)

    def predicate(row: dict[str, Any]) -> bool:
        try:
            return bool(_eval(tree.body, row))
        except (TypeError, ZeroDivisionError):
            return False

    return predicate


def _at(node: ast.AST, text: str) -> int:
    """The character index of ``node`` in ``text`` (the parser counts UTF-8 bytes)."""
    return len(text.encode()[: getattr(node, "col_offset", 0)].decode(errors="ignore"))


def _check(node: ast.AST, kinds: Mapping[str, str], text: str, where: int = 0) -> None:
    """Only allowed constructs and known columns; ``where``: the position of the nearest enclosing node
    that has one (operators have none)."""
    where = _at(node, text) if hasattr(node, "col_offset") else where
    if isinstance(node, ast.Name):
        if node.id not in kinds and node.id not in ("True", "False", "None"):
            raise FilterError(f"unknown column {node.id!r} (known: {', '.join(sorted(kinds))})", text, _at(node, text))
        return
    allowed = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.Compare, ast.BinOp, ast.Constant,
               ast.Tuple, ast.List, ast.Load, *(_CMP), *(_BIN))
    if not isinstance(node, allowed):
        what = _REFUSED.get(type(node), "this")
        raise FilterError(f"{what} is not allowed in a filter; a filter uses {ALLOWED}", text, where)
    for child in ast.iter_child_nodes(node):
        _check(child, kinds, text, where)


def _kind(node: ast.AST, kinds: Mapping[str, str]) -> str | None:
    """What ``node`` evaluates to, when it can be known before any row: number, text, time,
    true/false, list, or None (a missing value, or not known)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            return "true/false"
        return "number" if isinstance(value, int | float) else "text" if isinstance(value, str) else None
    if isinstance(node, ast.Name):
        return {"True": "true/false", "False": "true/false"}.get(node.id, kinds.get(node.id))
    if isinstance(node, ast.List | ast.Tuple):
        return "list"
    if isinstance(node, ast.Compare | ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return "true/false"
    if isinstance(node, ast.UnaryOp):
        return "number"
    if isinstance(node, ast.BinOp):
        left, right = _kind(node.left, kinds), _kind(node.right, kinds)
        return left if left == right and left in ("number", "text") else None
    return None


def _describe(node: ast.AST, text: str) -> str:
    return ast.get_source_segment(text, node) or "a value"


def _check_kinds(root: ast.AST, kinds: Mapping[str, str], text: str) -> None:
    """Refuse comparisons whose sides can never match (``request_ts >= 5``), pointing at the value."""
    for node in ast.walk(root):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn):
                _check_member(left, right, kinds, text)
            elif not isinstance(op, ast.Is | ast.IsNot):
                _check_pair(left, right, kinds, text)
            left = right


def _check_pair(left: ast.AST, right: ast.AST, kinds: Mapping[str, str], text: str) -> None:
    a, b = _kind(left, kinds), _kind(right, kinds)
    if a is None or b is None or a == b or {a, b} == {"time", "text"}:
        return
    column, value = (left, right) if isinstance(left, ast.Name) or not isinstance(right, ast.Name) else (right, left)
    hint = ' (a time is an ISO 8601 string, e.g. "2026-08-22T10:15:00Z")' if "time" in (a, b) else ""
    raise FilterError(
        f"{_describe(column, text)} is {_KIND_WORDS[_kind(column, kinds) or 'text']} and "
        f"{_describe(value, text)} is {_KIND_WORDS[_kind(value, kinds) or 'text']}: they never compare{hint}",
        text, _at(value, text))


def _check_member(item: ast.AST, container: ast.AST, kinds: Mapping[str, str], text: str) -> None:
    """``x in [..]``: each listed value must compare with x; ``x in topics`` / ``"ab" in client_id``: x is text."""
    if isinstance(container, ast.List | ast.Tuple):
        for element in container.elts:
            _check_pair(item, element, kinds, text)
        return
    kind = _kind(container, kinds)
    if kind in ("list", "text") and _kind(item, kinds) not in (None, "text"):
        raise FilterError(f"{_describe(container, text)} holds text, and {_describe(item, text)} is "
                          f"{_KIND_WORDS[_kind(item, kinds) or 'text']}", text, _at(item, text))
    if kind not in (None, "list", "text"):
        raise FilterError(f"{_describe(container, text)} is {_KIND_WORDS[kind]}: `in` needs a [list], text or "
                          "topics", text, _at(container, text))


def _times(node: ast.AST, timestamps: frozenset[str], text: str) -> None:
    """Turn each string compared with a timestamp column into its ns since the epoch."""
    for child in ast.walk(node):
        if not isinstance(child, ast.Compare):
            continue
        operands = [child.left, *child.comparators]
        if not any(isinstance(o, ast.Name) and o.id in timestamps for o in operands):
            continue
        listed = [e for o in operands if isinstance(o, ast.List | ast.Tuple) for e in o.elts]
        for value in [*operands, *listed]:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                ns = parse_iso_ns(value.value)
                if ns is None:
                    raise FilterError(f"not a time: {value.value!r} (ISO 8601, e.g. \"2026-08-22T10:15:00Z\")",
                                      text, _at(value, text))
                value.value = ns


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
    raise FilterError(f"not allowed in a filter; a filter uses {ALLOWED}")  # pragma: no cover - _check rejects it
