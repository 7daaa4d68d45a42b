"""Find secrets an object still holds: for tests that an error carries no key, prompt or media.

Formatting an exception proves little: ``raise ... from None`` hides ``__context__`` from the
traceback but keeps the reference, and an SDK error's ``body``, ``request`` and ``response``
hold the ``Authorization`` header and the whole request. ``reachable_secrets`` walks every
object reachable from the root — attributes, slots, ``args``, ``__cause__``, ``__context__``,
containers, bytes (and, with ``tracebacks=True``, tracebacks and their frames' locals) — and
reports each secret found in any string or bytes on the way.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["assert_holds_no_secret", "reachable_secrets"]

#: Objects past which the walk does not go: numbers, modules, classes, functions.
_OPAQUE = (bool, int, float, types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)


def _children(value: Any, tracebacks: bool) -> Iterator[Any]:
    if isinstance(value, BaseException):
        yield value.args
        yield value.__cause__
        yield value.__context__
        if tracebacks:
            yield value.__traceback__
        yield from getattr(value, "__notes__", ())
    if isinstance(value, types.TracebackType):
        yield value.tb_frame
        yield value.tb_next
        return
    if isinstance(value, types.FrameType):
        yield from value.f_locals.values()
        return
    if isinstance(value, Mapping):
        for key, item in list(value.items()):
            yield key
            yield item
    elif isinstance(value, list | tuple | set | frozenset):
        yield from list(value)
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict):
        yield from list(state.values())
    for cls in type(value).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                try:
                    yield object.__getattribute__(value, slot)
                except AttributeError:
                    continue


def reachable_secrets(
    root: object,
    secrets: Iterable[str | bytes],
    *,
    tracebacks: bool = False,
    limit: int = 200_000,
) -> set[str]:
    """The secrets (as given) that appear in any str or bytes reachable from ``root``.

    Tracebacks are skipped unless ``tracebacks`` is True: their frames hold the caller's own
    locals, which say nothing about what the error carries.
    """
    wanted = [(s, s.encode("utf-8", "replace") if isinstance(s, str) else s) for s in secrets if s]
    found: set[str] = set()
    seen: set[int] = set()
    stack: list[Any] = [root]
    while stack and len(seen) < limit:
        value = stack.pop()
        if value is None or isinstance(value, _OPAQUE) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, str | bytes | bytearray | memoryview):
            data = bytes(value) if not isinstance(value, str) else value.encode("utf-8", "replace")
            for given, needle in wanted:
                if needle in data:
                    found.add(given if isinstance(given, str) else given.decode("latin-1"))
            continue
        try:
            stack.extend(_children(value, tracebacks))
        except Exception:  # an object whose attributes cannot be read holds nothing we can see
            continue
    return found


def assert_holds_no_secret(root: object, *secrets: str | bytes, tracebacks: bool = False) -> None:
    """Fail if any of ``secrets`` can be read from anything reachable from ``root``."""
    found = reachable_secrets(root, secrets, tracebacks=tracebacks)
    assert not found, f"{type(root).__name__} still holds {sorted(found)!r}"
