"""JSON schemas counted against a service's documented size limits, before any request.

Services that compile a schema into a grammar (OpenAI's strict mode, Anthropic's structured
outputs) document how large it may be: levels of object nesting, object properties, optional
properties, properties with a union type, enum values, characters of names and values.
``SchemaLimits`` holds one service's numbers (None where it documents none); ``check`` counts
the schemas of one request together, as those services count them, and refuses the first
place where a count goes past its limit, so a request the service would refuse is never sent.

The services name what they count and no more, so each count is its plainest reading:

- depth: an object is one level below the object that holds it (through ``properties``,
  ``items``, ``anyOf``...); the root object is level 1, and so is a ``$defs`` entry's;
- properties: every entry of every ``properties``; optional ones: those their object's
  ``required`` does not list;
- unions: every schema with ``anyOf`` or ``oneOf`` of two options or more, or a ``type`` list
  of two types or more;
- enum values: every entry of every ``enum``; characters: property names, ``$defs`` names and
  the string values of ``enum`` and ``const``;
- a ``$ref`` is not followed: a definition counts once, where it is written (a service that
  expands references counts at least as much, so nothing refused here would pass there).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

__all__ = ["SchemaLimits"]

#: A place in a schema, built only when a refusal names it: the root's path, or the place
#: holding it and the step down (``.key``, ``[]``, ``[0]``).
_Place = str | tuple["_Place", str]


@attrs.frozen(kw_only=True)
class SchemaLimits:
    """One service's documented limits on the JSON schemas of a request (None: none given).

    ``large_enum_values`` and ``max_large_enum_chars`` go together: one enum of more string
    values than the first holds at most the second's characters (OpenAI's rule).
    """

    max_depth: int | None = None
    max_properties: int | None = None
    max_optional: int | None = None
    max_unions: int | None = None
    max_enum_values: int | None = None
    max_chars: int | None = None
    large_enum_values: int | None = None
    max_large_enum_chars: int | None = None

    def check(
        self,
        schemas: Iterable[tuple[str, Mapping[str, Any]]],
        refuse: Callable[[str, str], Exception],
    ) -> None:
        """Count ``schemas`` (each with the path of its root, such as ``"$"``) together and
        raise ``refuse(place, reason)`` for the first place past a limit; return if none is.
        """
        count = _Count(self)
        for root, schema in schemas:
            count.node(schema, root, root, 0)
        for what, place in count.passed.items():  # the first limit passed, if any
            raise refuse(_text(place), count.reason(what))


def _text(place: _Place) -> str:
    steps: list[str] = []
    while isinstance(place, tuple):
        place, step = place
        steps.append(step)
    return place + "".join(reversed(steps))


class _Count:
    """The running totals of one request's schemas, and where each first went past its limit
    (``passed``, in the order they did)."""

    def __init__(self, limits: SchemaLimits) -> None:
        self.limits = limits
        given = {
            "depth": limits.max_depth,
            "properties": limits.max_properties,
            "optional": limits.max_optional,
            "unions": limits.max_unions,
            "enum": limits.max_enum_values,
            "chars": limits.max_chars,
            "large_enum": limits.max_large_enum_chars,
        }
        self.limit = {what: math.inf if n is None else n for what, n in given.items()}
        self.total = dict.fromkeys(given, 0)
        self.passed: dict[str, _Place] = {}
        self._large_enum = (0, 0)  # the values and characters of the first enum past its limit

    def add(self, what: str, amount: int, place: _Place) -> None:
        total = self.total[what] = self.total[what] + amount
        if total > self.limit[what] and what not in self.passed:
            self.passed[what] = place

    def node(self, schema: Any, place: _Place, root: str, depth: int) -> None:
        if not isinstance(schema, Mapping):
            return
        kind = schema.get("type")
        if (
            kind == "object"
            or "properties" in schema
            or (isinstance(kind, list) and "object" in kind)
        ):
            depth += 1
            if depth > self.limit["depth"]:
                self.passed.setdefault("depth", place)
                return  # refused already: deeper levels would only cost time (and stack)
        if isinstance(kind, list) and len(set(map(str, kind))) > 1:
            self.add("unions", 1, place)
        for key, value in schema.items():  # one pass: most schemas hold two or three keys
            if key == "properties" and isinstance(value, Mapping):
                self._properties(value, schema.get("required"), place, root, depth)
            elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
                if key != "allOf" and len(value) > 1:
                    self.add("unions", 1, place)
                for option in value:
                    self.node(option, place, root, depth)
            elif key == "items" and isinstance(value, Mapping):
                self.node(value, (place, "[]"), root, depth)
            elif key in ("items", "prefixItems") and isinstance(value, list):
                for i, sub in enumerate(value):
                    self.node(sub, (place, f"[{i}]"), root, depth)
            elif key in ("$defs", "definitions") and isinstance(value, Mapping):
                for name, sub in value.items():
                    at: _Place = f"{key}.{name}" if root == "$" else (root, f".{key}.{name}")
                    self.add("chars", len(str(name)), at)
                    self.node(sub, at, root, 0)
            elif key == "enum" and isinstance(value, list):
                self._enum(value, place)
            elif key == "const" and isinstance(value, str):
                self.add("chars", len(value), place)

    def _properties(
        self, properties: Mapping[str, Any], required: Any, place: _Place, root: str, depth: int
    ) -> None:
        listed = set(required) if isinstance(required, list) else ()
        for key, sub in properties.items():
            at = (place, f".{key}")
            self.add("properties", 1, at)
            self.add("chars", len(str(key)), at)
            if key not in listed:
                self.add("optional", 1, at)
            self.node(sub, at, root, depth)

    def _enum(self, values: list[Any], place: _Place) -> None:
        """Count an ``enum``'s values and the characters of its strings."""
        self.add("enum", len(values), place)
        strings = [v for v in values if isinstance(v, str)]
        chars = sum(map(len, strings))
        self.add("chars", chars, place)
        over = self.limits.large_enum_values
        first = "large_enum" not in self.passed
        if first and over is not None and len(strings) > over and chars > self.limit["large_enum"]:
            self._large_enum = (len(strings), chars)
            self.passed["large_enum"] = place

    def reason(self, what: str) -> str:
        """Why the first place past a limit is refused: the count, and the limit."""
        limit = self.limit[what]
        if what == "depth":
            return f"objects nest more than {limit} levels deep; the limit is {limit} levels"
        if what == "large_enum":
            values, chars = self._large_enum
            return (
                f"an enum of {values} string values holds {chars} characters; the limit is "
                f"{limit} for an enum of more than {self.limits.large_enum_values} values"
            )
        described = {
            "properties": "object properties",
            "optional": "optional properties (ones their object's `required` does not list)",
            "unions": "properties with a union type (`anyOf`, or a list of types)",
            "enum": "enum values",
            "chars": "characters of property names, definition names and enum and const values",
        }[what]
        return f"{self.total[what]} {described} in all; the limit is {limit}, passed here"
