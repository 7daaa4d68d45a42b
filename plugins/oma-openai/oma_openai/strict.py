"""JSON schemas made strict, as Chat Completions' structured outputs want them.

OpenAI's strict mode (``response_format`` ``json_schema`` with ``strict: true``, and strict
function tools) takes a subset of JSON Schema: every object sets ``additionalProperties: false``
and lists every property in ``required`` (an optional property is emulated by letting it be
``null``); the root is an object. ``strict_schema`` applies those rules to an output schema, or
refuses it locally with ``OutputTypeError`` where it cannot hold (an open dict: keys not known
in advance have no strict form), so a request the service would refuse is never sent. The core
reads a ``null`` in an optional property as absent, so the output type's default applies.

The strict schema is then held to OpenAI's documented size limits (the "Supported schemas"
section of the Structured Outputs guide): at most 10 levels of object nesting and 5,000
object properties; at most 1,000 enum values, and 120,000 characters of property names,
definition names, enum and const values, in all; one string enum of more than 250 values holds
at most 15,000 characters. They are counted by the toolkit's ``SchemaLimits``. Pure
functions, no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oma_core.errors import OutputTypeError
from oma_core.toolkit import SchemaLimits

__all__ = ["LIMITS", "MAX_DEPTH", "MAX_ENUM_VALUES", "MAX_PROPERTIES", "strict_schema"]

#: OpenAI's documented limits on a strict schema.
MAX_DEPTH = 10
MAX_PROPERTIES = 5_000
MAX_ENUM_VALUES = 1_000
LIMITS = SchemaLimits(
    max_depth=MAX_DEPTH,
    max_properties=MAX_PROPERTIES,
    max_enum_values=MAX_ENUM_VALUES,
    max_chars=120_000,
    large_enum_values=250,
    max_large_enum_chars=15_000,
)
#: Keywords strict mode does not take and that constrain nothing oma checks: dropped.
_DROPPED = frozenset({"default", "examples", "$schema", "$comment"})


class _Walk:
    def __init__(self, name: str, service: str) -> None:
        self.name = name
        self.service = service

    def refuse(self, path: str, reason: str) -> OutputTypeError:
        return OutputTypeError(
            self.name, f"{self.service} strict structured output cannot take {path}: {reason}"
        )

    def node(self, schema: Any, path: str) -> dict[str, Any]:
        if not isinstance(schema, Mapping):
            raise self.refuse(path, "a schema must be an object")
        out = {k: v for k, v in schema.items() if k not in _DROPPED}
        kind = out.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in out:
            out = self.object(out, path)
        if isinstance(out.get("items"), Mapping):
            out["items"] = self.node(out["items"], f"{path}[]")
        if isinstance(out.get("anyOf"), list):
            out["anyOf"] = [self.node(option, path) for option in out["anyOf"]]
        if isinstance(out.get("$defs"), Mapping):
            out["$defs"] = {
                key: self.node(sub, f"$defs.{key}") for key, sub in out["$defs"].items()
            }
        return out

    def object(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        properties = node.get("properties") or {}
        extra = node.get("additionalProperties")
        if extra not in (None, False) or (extra is None and not properties):
            raise self.refuse(
                path,
                "an open dict (keys not known in advance) has no strict form; give it fixed "
                "properties, or use a list of key/value objects",
            )
        required = set(node.get("required") or ())
        strict: dict[str, Any] = {}
        for key, sub in properties.items():
            made = self.node(sub, f"{path}.{key}")
            strict[key] = made if key in required else _nullable(made)
        node["properties"] = strict
        node["required"] = list(strict)
        node["additionalProperties"] = False
        return node


def _allows_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return "enum" not in schema or None in schema["enum"]
    if "enum" in schema and "type" not in schema:
        return None in schema["enum"]
    options = schema.get("anyOf") or ()
    return any(isinstance(o, Mapping) and _allows_null(o) for o in options)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional property's schema as strict mode wants it: required, but nullable."""
    if _allows_null(schema):
        return schema
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def strict_schema(schema: Mapping[str, Any], name: str, service: str) -> dict[str, Any]:
    """``schema`` made strict (a new dict); ``OutputTypeError`` naming the place where it
    cannot be, or a documented limit it is over. ``name`` is the output's, ``service`` the
    display name errors give."""
    walk = _Walk(name, service)
    if schema.get("type") != "object":
        raise walk.refuse("$", "the root must be an object")
    LIMITS.check([("$", schema)], walk.refuse)  # making it strict changes none of the counts
    return walk.node(schema, "$")
