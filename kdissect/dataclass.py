"""``dataclass`` as the standard library's, but without source code compiled per class: one shared
``__eq__``, ``__hash__``, ``__repr__`` and ordering for every class, and ``__init__`` from a template.

The standard decorator writes each class's methods as text and ``exec``\\ s it: with a hundred-odd classes
that was a measurable part of every process's start-up (a summary run's fixed cost is most of its cost).
The standard decorator still collects the fields, so ``fields``, ``replace``, ``asdict``, ``slots`` and
``FrozenInstanceError`` behave as ever; the comparison methods read a per-class key (an ``attrgetter`` of
the compared fields). Semantics kept: equality and ordering only between instances of the very same class
(else ``NotImplemented``), ``compare=False``/``hash=`` per field, the standard ``__hash__`` rules
(frozen+eq: hashed by fields; eq alone: unhashable; a ``__hash__`` or method written in the body wins).

``__init__`` and a frozen class's ``__setattr__``/``__delattr__`` are made here too, for a class with no
dataclass base, no ``__post_init__`` and no ``InitVar`` (any other goes to the standard decorator whole):
compiling their source per class was most of what remained (129 sources, ~0.02 CPU s of each run).
An ``__init__`` is the code of one template per shape of fields (each field: a parameter, one defaulting
to its factory, a factory's value or a slot's default; keyword-only or not; frozen or not), compiled
once per process with placeholder names and renamed per class (``CodeType.replace``): the bytecode the
standard one runs, with its signature, defaults, annotations, errors and docstring. The frozen methods
are closures; frozen slotted classes get the standard pickling state.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from reprlib import recursive_repr
from types import CodeType, FunctionType
from typing import Any, TypeVar

T = TypeVar("T")


def _key(names: list[str]) -> Callable[[Any], Any]:
    """The compared fields' values as one comparable (a tuple, or the value itself for one field)."""
    return attrgetter(*names) if names else lambda _: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = self.__class__.__kd_eq_key__
    return key(self) == key(other)


def _hash(self: Any) -> int:
    return hash(self.__class__.__kd_hash_key__(self))


@recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__.__kd_repr_names__)
    return f"{self.__class__.__qualname__}({shown})"


def _order(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        key = self.__class__.__kd_eq_key__
        return compare(key(self), key(other))

    return method


_ORDER = {
    "__lt__": _order(lambda a, b: a < b),
    "__le__": _order(lambda a, b: a <= b),
    "__gt__": _order(lambda a, b: a > b),
    "__ge__": _order(lambda a, b: a >= b),
}


def _set(cls: type, name: str, value: Any) -> bool:
    """Set a method the class body did not write itself (the standard rule); whether it was set."""
    if name in cls.__dict__:
        return False
    setattr(cls, name, value)
    return True


def _hash_action(cls: type, eq: bool, frozen: bool, unsafe_hash: bool, explicit: bool) -> None:
    """The standard ``__hash__`` table: add one, make the class unhashable, or leave it."""
    if unsafe_hash:
        if explicit:
            raise TypeError(f"Cannot overwrite attribute __hash__ in class {cls.__name__}")
        cls.__hash__ = _hash  # type: ignore[method-assign]
    elif eq and not explicit:
        cls.__hash__ = _hash if frozen else None  # type: ignore[assignment,method-assign]


def _shape(cls: type, *, repr: bool, eq: bool, order: bool, unsafe_hash: bool, frozen: bool,
           explicit_hash: bool) -> type:  # fmt: skip
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    compared = [f.name for f in fields if f.compare]
    hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    cls.__kd_eq_key__ = staticmethod(_key(compared))  # type: ignore[attr-defined]
    cls.__kd_hash_key__ = staticmethod(_key(hashed))  # type: ignore[attr-defined]
    cls.__kd_repr_names__ = tuple(f.name for f in fields if f.repr)  # type: ignore[attr-defined]
    if repr:
        _set(cls, "__repr__", _repr)
    if eq:
        _set(cls, "__eq__", _eq)
    if order:
        if not eq:
            raise ValueError("eq must be true if order is true")
        for name, method in _ORDER.items():
            if not _set(cls, name, method):
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    _hash_action(cls, eq, frozen, unsafe_hash, explicit_hash)
    return cls


class _Factory:
    """The default of a parameter whose field has a default factory (shown as the standard one shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
_MISSING = dataclasses.MISSING


def _writes_own(cls: type, frozen: bool) -> bool:
    """Whether ``__init__`` and the frozen methods are made here (see the module docstring); else the
    standard decorator makes them and applies its rules on inheritance, ``__post_init__`` and ``InitVar``."""
    notes = inspect.get_annotations(cls)
    return not (
        any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])
        or hasattr(cls, "__post_init__")
        or "self" in notes
        or any(
            (isinstance(a, str) and "InitVar" in a) or a is dataclasses.InitVar or isinstance(a, dataclasses.InitVar)
            for a in notes.values()
        )
        or (frozen and ("__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__))
    )


def _kind(f: dataclasses.Field, slots: bool) -> str | None:
    """A field's part in ``__init__``: parameter (P), parameter defaulting to its factory (Q), its
    factory's value (F), its default stored in a slot (D), none (None: a class attribute or nothing)."""
    factory = f.default_factory is not _MISSING
    if f.init:
        return "Q" if factory else "P"
    if factory:
        return "F"
    return "D" if slots and f.default is not _MISSING else None


_VALUES = {"P": "{n}", "Q": "_d{i}() if {n} is _FACTORY else {n}", "F": "_d{i}()", "D": "_d{i}"}


@cache
def _template(shape: tuple[tuple[str, bool], ...], frozen: bool) -> CodeType:
    """The ``__init__`` of fields of this shape ((kind, keyword-only) each), named f0, f1, ...: compiled
    once per process, renamed per class."""
    params = [f"f{i}" for i, (kind, kw) in enumerate(shape) if kind in "PQ" and not kw]
    keywords = [f"f{i}" for i, (kind, kw) in enumerate(shape) if kind in "PQ" and kw]
    lines = []
    for i, (kind, _) in enumerate(shape):
        value = _VALUES[kind].format(i=i, n=f"f{i}")
        lines.append(f"_setattr(self, 'f{i}', {value})" if frozen else f"self.f{i} = {value}")
    signature = ", ".join(["self", *params, *(["*", *keywords] if keywords else [])])
    source = f"def __init__({signature}):\n " + "\n ".join(lines or ["pass"])
    scope: dict[str, Any] = {}
    exec(compile(source, "<kdissect.dataclass>", "exec"), scope)  # our own text: no input in it
    return scope["__init__"].__code__


def _make_init(cls: type, frozen: bool, slots: bool) -> None:
    """Set ``cls.__init__`` from its shape's template (unless the class body wrote one)."""
    fields = [(f, kind) for f in dataclasses.fields(cls) if (kind := _kind(f, slots)) is not None]
    seen_default = False
    for f in dataclasses.fields(cls):
        if f.init and not f.kw_only:
            if f.default is not _MISSING or f.default_factory is not _MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
    code = _template(tuple((kind, f.kw_only) for f, kind in fields), frozen)
    rename = {f"f{i}": f.name for i, (f, _) in enumerate(fields)}
    code = code.replace(
        co_varnames=tuple(rename.get(n, n) for n in code.co_varnames),
        co_names=tuple(rename.get(n, n) for n in code.co_names),
        co_consts=tuple(rename.get(c, c) if type(c) is str else c for c in code.co_consts),
    )
    scope: dict[str, Any] = {"__builtins__": builtins, "__name__": cls.__module__, "_setattr": object.__setattr__,
                             "_FACTORY": _FACTORY}  # fmt: skip
    defaults: dict[str, Any] = {}
    for i, (f, kind) in enumerate(fields):
        if kind in "QF":
            scope[f"_d{i}"] = f.default_factory
        elif kind == "D":
            scope[f"_d{i}"] = f.default
        if kind == "Q":
            defaults[f.name] = _FACTORY
        elif kind == "P" and f.default is not _MISSING:
            defaults[f.name] = f.default
    params = code.co_varnames[1 : 1 + code.co_argcount - 1]
    keywords = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    init = FunctionType(code, scope, "__init__", tuple(defaults[n] for n in params if n in defaults) or None)
    init.__kwdefaults__ = {n: defaults[n] for n in keywords if n in defaults} or None
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {f.name: f.type for f, kind in fields if kind in "PQ"} | {"return": None}
    _set(cls, "__init__", init)


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


def _make_frozen(cls: type, slots: bool) -> None:
    """The standard frozen ``__setattr__``/``__delattr__`` (a field, or anything on the class itself,
    raises), and for slots the pickling state that bypasses them."""
    names = frozenset(f.name for f in dataclasses.fields(cls))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    if slots:
        _set(cls, "__getstate__", _getstate)
        _set(cls, "__setstate__", _setstate)


def _described(cls: type) -> str:
    """The standard docstring of a class that has none: its name and signature."""
    try:
        return cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    except (TypeError, ValueError):
        return cls.__name__


def dataclass(cls: type[T] | None = None, /, *, init: bool = True, repr: bool = True, eq: bool = True,
              order: bool = False, unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
              kw_only: bool = False, slots: bool = False) -> Any:  # fmt: skip
    """``dataclasses.dataclass`` with shared comparison, hash and repr methods (see the module docstring)."""

    def wrap(cls: type[T]) -> type[T]:
        body_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
        explicit_hash = not (body_hash is dataclasses.MISSING or (body_hash is None and "__eq__" in cls.__dict__))
        own = _writes_own(cls, frozen)
        undocumented = own and not cls.__doc__
        if undocumented:  # the standard decorator would describe the signature before __init__ exists
            cls.__doc__ = "-"
        made = dataclasses.dataclass(cls, init=init and not own, repr=False, eq=False, order=False,
                                     unsafe_hash=False, frozen=frozen and not own, match_args=match_args,
                                     kw_only=kw_only, slots=slots)  # fmt: skip
        if own:
            if init:
                _make_init(made, frozen, slots)
            if frozen:
                _make_frozen(made, slots)
            made.__dataclass_params__.init = init  # type: ignore[attr-defined]
            made.__dataclass_params__.frozen = frozen  # type: ignore[attr-defined]
            if undocumented:
                made.__doc__ = _described(made)
        return _shape(made, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash, frozen=frozen,
                      explicit_hash=explicit_hash)  # type: ignore[return-value]  # fmt: skip

    return wrap if cls is None else wrap(cls)
