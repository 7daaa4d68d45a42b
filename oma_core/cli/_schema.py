"""``oma run --schema SCHEMA``: the JSON Schema a run's answer must match.

SCHEMA is a JSON Schema file, inline JSON (``'{"type": "object", ...}'``), or ``llm``'s concise
form: fields separated by commas (or by newlines, so that descriptions may hold commas), each
``name [type][: description]`` with type ``str`` (the default), ``int``, ``float`` or ``bool``:
``'name, age int, bio: a short biography'``. ``--schema-multi`` asks for a list of such objects.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["SchemaError", "concise_schema", "load_schema"]

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_FIELD = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)(?:\s+(?P<type>\w+))?$")


class SchemaError(ValueError):
    """A ``--schema`` value that is neither a file, nor JSON, nor the concise form; the
    message says where."""


def concise_schema(text: str) -> dict[str, Any]:
    """The object schema the concise form describes (every field required)."""
    separator = "\n" if "\n" in text else ","
    properties: dict[str, Any] = {}
    for raw in text.split(separator):
        field = raw.strip()
        if not field:
            continue
        head, colon, description = field.partition(":")
        match = _FIELD.match(head.strip())
        if match is None:
            raise SchemaError(
                f"--schema field {field!r} is not `name [type][: description]` "
                "(types: str, int, float, bool)"
            )
        name, kind = match.group("name"), match.group("type") or "str"
        if kind not in _TYPES:
            raise SchemaError(
                f"--schema field {name!r} has the unknown type {kind!r} "
                "(use str, int, float or bool)"
            )
        if name in properties:
            raise SchemaError(f"--schema names the field {name!r} twice")
        schema: dict[str, Any] = {"type": _TYPES[kind]}
        if colon and description.strip():
            schema["description"] = description.strip()
        properties[name] = schema
    if not properties:
        raise SchemaError("--schema is empty: name at least one field, e.g. 'name, age int'")
    return {"type": "object", "properties": properties, "required": list(properties)}


def load_schema(value: str, *, multi: bool = False) -> dict[str, Any]:
    """The JSON Schema ``--schema value`` names (a list of it with ``multi``)."""
    stripped = value.strip()
    if stripped.startswith("{"):
        schema = _json(stripped, "--schema")
    elif _is_file(value):
        schema = _json(Path(value).read_text(encoding="utf-8"), f"--schema file {value}")
    else:
        schema = concise_schema(value)
    return {"type": "array", "items": schema} if multi else schema


def _is_file(value: str) -> bool:
    try:
        return "\n" not in value and Path(value).is_file()
    except OSError:  # a name too long for the file system: not a file
        return False


def _json(text: str, where: str) -> dict[str, Any]:
    try:
        schema = json.loads(text)
    except ValueError as error:
        raise SchemaError(f"{where} is not valid JSON: {error}") from None
    if not isinstance(schema, dict):
        raise SchemaError(f"{where} must be a JSON object (a JSON Schema)")
    return schema
