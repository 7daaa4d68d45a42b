"""``oma run --schema SCHEMA``: the JSON Schema a run's answer must match.

SCHEMA is a JSON Schema file, inline JSON (``'{"type": "object", ...}'``), or ``llm``'s concise
form: fields separated by commas (or by newlines, so that descriptions may hold commas), each
``name [type][: description]`` with type ``str`` (the default), ``int``, ``float`` or ``bool``:
``'name, age int, bio: a short biography'``. ``--schema-multi SCHEMA`` asks for several, as
``llm``'s does: the answer is an object ``{"items": [...]}`` of them.

A SCHEMA that looks like a file name (``schema.json``, ``./x``, ``dir/x``) and names no file
is said to be missing, not read as fields. A file is read up to ``MAX_SCHEMA_BYTES``, and
JSON nested past what Python can read is refused, never a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["MAX_SCHEMA_BYTES", "SchemaError", "concise_schema", "load_schema", "multi_schema"]

#: A schema file larger than this is not read.
MAX_SCHEMA_BYTES = 1 << 20
#: What looks like a file name rather than concise fields: a path separator, or a dotted
#: name with no space or comma (``nosuch.json``; a field name has no dot).
_FILE_LIKE = re.compile(r"^[^\s,:]*(?:[/\\]|\.\w+$)[^\s,:]*$")

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_FIELD = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)(?:\s+(?P<type>\w+))?$")


class SchemaError(ValueError):
    """A ``--schema`` value that is neither a file, nor JSON, nor the concise form; the
    message says where."""


def concise_schema(text: str, option: str = "--schema") -> dict[str, Any]:
    """The object schema the concise form describes (every field required); ``option``
    names where it came from in an error."""
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
                f"{option} field {field!r} is not `name [type][: description]` "
                "(types: str, int, float, bool)"
            )
        name, kind = match.group("name"), match.group("type") or "str"
        if kind not in _TYPES:
            raise SchemaError(
                f"{option} field {name!r} has the unknown type {kind!r} "
                "(use str, int, float or bool)"
            )
        if name in properties:
            raise SchemaError(f"{option} names the field {name!r} twice")
        schema: dict[str, Any] = {"type": _TYPES[kind]}
        if colon and description.strip():
            schema["description"] = description.strip()
        properties[name] = schema
    if not properties:
        raise SchemaError(f"{option} is empty: name at least one field, e.g. 'name, age int'")
    return {"type": "object", "properties": properties, "required": list(properties)}


def load_schema(value: str, option: str = "--schema") -> dict[str, Any]:
    """The JSON Schema ``--schema value`` names: inline JSON, a file, or concise fields."""
    stripped = value.strip()
    if stripped.startswith("{"):
        return _json(stripped, option)
    path = Path(value)
    if _is_file(value):
        return _json(_read(path, option), f"{option} file {value}")
    if "\n" not in value and _FILE_LIKE.match(stripped):
        kind = "is a directory" if _is_dir(path) else "does not exist"
        raise SchemaError(
            f"{option} file {value} {kind} (SCHEMA is a JSON Schema file, inline JSON, or "
            "fields such as 'name, age int')"
        )
    return concise_schema(value, option)


def multi_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """What ``--schema-multi`` asks for, as ``llm`` does: an object whose ``items`` are a
    list of ``schema``'s objects."""
    return {
        "type": "object",
        "properties": {"items": {"type": "array", "items": schema}},
        "required": ["items"],
    }


def _is_file(value: str) -> bool:
    try:
        return "\n" not in value and Path(value).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL: not a file
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _read(path: Path, option: str) -> str:
    """The file's text, at most ``MAX_SCHEMA_BYTES`` of UTF-8; else a ``SchemaError``."""
    where = f"{option} file {path}"
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_SCHEMA_BYTES + 1)
    except OSError as error:
        raise SchemaError(f"cannot read {where}: {error.strerror or error}") from None
    if len(raw) > MAX_SCHEMA_BYTES:
        raise SchemaError(f"{where} is larger than {MAX_SCHEMA_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SchemaError(f"{where} is not UTF-8 text") from None


def _json(text: str, where: str) -> dict[str, Any]:
    try:
        schema = json.loads(text)
    except ValueError as error:
        raise SchemaError(f"{where} is not valid JSON: {error}") from None
    except RecursionError:
        raise SchemaError(f"{where} is nested too deeply to read") from None
    if not isinstance(schema, dict):
        raise SchemaError(f"{where} must be a JSON object (a JSON Schema)")
    return schema
