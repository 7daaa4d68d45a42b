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

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

__all__ = ["SchemaLimits"]

_UNIONS = ("anyOf", "oneOf")
_COMBINED = ("anyOf", "oneOf", "allOf")
_DEFS = ("$defs", "definitions")


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
        if count.problems:
            place, reason = count.problems[0]
            raise refuse(place, count.reason(reason))


class _Count:
    """The running totals of one request's schemas, and where each first went past its
    limit (in the order they did)."""

    def __init__(self, limits: SchemaLimits) -> None:
        self.limits = limits
        self._limits = {
            "depth": limits.max_depth,
            "properties": limits.max_properties,
            "optional": limits.max_optional,
            "unions": limits.max_unions,
            "enum": limits.max_enum_values,
            "chars": limits.max_chars,
            "large_enum": limits.max_large_enum_chars,
        }
        self.totals = {"properties": 0, "optional": 0, "unions": 0, "enum": 0, "chars": 0}
        self.problems: list[tuple[str, str]] = []
        self._seen: set[str] = set()
        self._large_enum: tuple[int, int] = (0, 0)

    def _past(self, what: str, place: str) -> None:
        if what not in self._seen:
            self._seen.add(what)
            self.problems.append((place, what))

    def add(self, what: str, amount: int, place: str) -> None:
        self.totals[what] += amount
        limit = self._limits[what]
        if limit is not None and self.totals[what] > limit:
            self._past(what, place)

    def node(self, schema: Any, path: str, root: str, depth: int) -> None:
        if not isinstance(schema, Mapping):
            return
        kind = schema.get("type")
        if any(isinstance(schema.get(k), list) and len(schema[k]) > 1 for k in _UNIONS) or (
            isinstance(kind, list) and len(set(map(str, kind))) > 1
        ):
            self.add("unions", 1, path)
        self._values(schema, path)
        properties = schema.get("properties")
        if (
            kind == "object"
            or (isinstance(kind, list) and "object" in kind)
            or properties is not None
        ):
            depth += 1
            limit = self.limits.max_depth
            if limit is not None and depth > limit:
                self._past("depth", path)
                return  # refused already: deeper levels would only cost time (and stack)
        if isinstance(properties, Mapping):
            required = schema.get("required")
            listed = set(required) if isinstance(required, list) else set()
            for key, sub in properties.items():
                place = f"{path}.{key}"
                self.add("properties", 1, place)
                self.add("chars", len(str(key)), place)
                if key not in listed:
                    self.add("optional", 1, place)
                self.node(sub, place, root, depth)
        items = schema.get("items")
        if isinstance(items, Mapping):
            self.node(items, f"{path}[]", root, depth)
        for key in ("items", "prefixItems"):
            if isinstance(schema.get(key), list):
                for i, sub in enumerate(schema[key]):
                    self.node(sub, f"{path}[{i}]", root, depth)
        for key in _COMBINED:
            if isinstance(schema.get(key), list):
                for option in schema[key]:
                    self.node(option, path, root, depth)
        for key in _DEFS:
            defs = schema.get(key)
            if isinstance(defs, Mapping):
                for name, sub in defs.items():
                    place = f"{key}.{name}" if root == "$" else f"{root}.{key}.{name}"
                    self.add("chars", len(str(name)), place)
                    self.node(sub, place, root, 0)

    def _values(self, schema: Mapping[str, Any], path: str) -> None:
        """Count an ``enum``'s values and the characters of its strings and a ``const``'s."""
        const = schema.get("const")
        if isinstance(const, str):
            self.add("chars", len(const), path)
        enum = schema.get("enum")
        if not isinstance(enum, list):
            return
        self.add("enum", len(enum), path)
        strings = [v for v in enum if isinstance(v, str)]
        chars = sum(map(len, strings))
        self.add("chars", chars, path)
        over = self.limits.large_enum_values
        limit = self.limits.max_large_enum_chars
        if over is not None and limit is not None and len(strings) > over and chars > limit:
            if "large_enum" not in self._seen:
                self._large_enum = (len(strings), chars)
            self._past("large_enum", path)

    def reason(self, what: str) -> str:
        """Why the first place past a limit is refused: the count, and the limit."""
        limit = self._limits[what]
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
        return f"{self.totals[what]} {described} in all; the limit is {limit}, passed here"
