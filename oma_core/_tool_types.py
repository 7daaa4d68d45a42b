"""The types a tool takes: their JSON schema, the check of arguments against it, and the
cattrs converter that turns checked arguments into the annotated Python values.

Supported: str, int, float, bool, ``Literal``, ``Enum``, lists, tuples and dicts of those,
``Optional`` and unions, ``datetime``/``date``/``time`` (ISO 8601 strings), attrs classes,
dataclasses, TypedDicts, pydantic models and ``Annotated[T, "description"]``. pydantic is never
imported here: a model is recognised only when pydantic is already loaded (as it is when the
tool's own module uses it). cattrs loads on the first structuring, not with this module.

The names in ``__all__`` are ``tools``' internal interface, not public API.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import json
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

if TYPE_CHECKING:
    import cattrs

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "SchemaLimitError",
    "check",
    "describe_exception",
    "is_json",
    "is_pydantic_model",
    "schema_for",
    "schema_problem",
    "structure",
    "unstructure",
]

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}

#: The most objects and arrays a tool's schema may hold once its ``$ref``s are written in
#: place. Definitions that each refer to the next twice double at every level: 2 KB of them
#: grew to 650 MB (20 levels) before this bound; an ordinary large schema holds hundreds.
MAX_SCHEMA_NODES = 10_000
#: The deepest a schema may nest schemas in schemas (a ``properties`` entry, an ``anyOf``
#: option, ``items``...); the argument check recurses that deep.
MAX_SCHEMA_DEPTH = 100


class SchemaLimitError(TypeError):
    """A schema past ``MAX_SCHEMA_NODES`` (or ``MAX_SCHEMA_DEPTH``) once its ``$ref``s are
    written in place; the message says which, to follow "input_schema"."""


def schema_for(annotation: Any) -> dict[str, Any]:
    """The JSON schema of one annotation; ``TypeError`` for a type a tool cannot take."""
    return _schema_for(annotation, set())


def structure(value: Any, annotation: Any, path: str) -> Any:
    """``value`` (which passed ``check``) as the Python value ``annotation`` asks for.

    Raises ``ValueError`` naming the first place that cannot become its type, as
    ``f"{place} {reason}"`` (a date-time that is not ISO 8601, a value a model refuses).
    """
    problem: str | None = None
    try:
        return _converter().structure(value, annotation)
    except Exception as error:  # cattrs' validation groups, a model's own refusal
        problem = _structure_problem(error, path)
    raise ValueError(problem)


def unstructure(value: Any) -> Any:
    """``value`` (a value ``structure`` made: an attrs class, a dataclass, a pydantic model,
    a date...) as plain JSON data: the inverse of ``structure``, with the same converter."""
    return _converter().unstructure(value)


def _schema_for(annotation: Any, seen: set[type]) -> dict[str, Any]:
    """The JSON schema of one annotation; TypeError for types a tool cannot take."""
    if annotation is Any or annotation is object:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = _schema_for(args[0], seen)
        notes = [a for a in args[1:] if isinstance(a, str)]
        return {**schema, "description": notes[0]} if notes else schema
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    if origin is Literal:
        values = list(args)
        if not all(isinstance(v, str | int | float | bool) or v is None for v in values):
            raise TypeError("Literal values must be str, int, float, bool or None")
        return {"enum": values}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        schemas = [_schema_for(a, seen) for a in options]
        if len(options) < len(args):
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if origin in (list, Sequence, tuple) or annotation in (list, tuple):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError("only tuple[X, ...] is supported; use list[X]")
        item = _schema_for(args[0], seen) if args else {}
        return {"type": "array", "items": item}
    if origin in (dict, Mapping) or annotation is dict:
        if args and args[0] is not str:
            raise TypeError("dict keys must be str")
        value = _schema_for(args[1], seen) if args else {}
        return {"type": "object", "additionalProperties": value}
    if annotation in _FORMATS:
        return {"type": "string", "format": _FORMATS[annotation]}
    if origin is typing.Required or origin is typing.NotRequired:
        return _schema_for(args[0], seen)
    fields = _record_fields(annotation)
    if fields is not None:
        if annotation in seen:
            raise TypeError(f"recursive type {annotation.__name__} is not supported")
        properties: dict[str, Any] = {}
        required: list[str] = []
        for key, field_type, is_required in fields:
            properties[key] = _schema_for(field_type, seen | {annotation})
            if is_required:
                required.append(key)
        described: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            described["required"] = required
        described["additionalProperties"] = False
        return described
    if is_pydantic_model(annotation):
        return inline_refs(annotation.model_json_schema())
    raise TypeError(f"unsupported type {annotation!r}")


_FORMATS: dict[Any, str] = {
    datetime.datetime: "date-time",
    datetime.date: "date",
    datetime.time: "time",
}


def _record_fields(annotation: Any) -> list[tuple[str, Any, bool]] | None:
    """(key, type, required) of each field of an attrs class, a dataclass or a TypedDict;
    None for any other type."""
    if not isinstance(annotation, type):
        return None
    if attrs.has(annotation):
        hints = typing.get_type_hints(annotation, include_extras=True)
        return [
            (field.alias or field.name, hints.get(field.name, Any), field.default is attrs.NOTHING)
            for field in attrs.fields(annotation)
            if field.init
        ]
    if dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation, include_extras=True)
        return [
            (
                field.name,
                hints.get(field.name, Any),
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING,
            )
            for field in dataclasses.fields(annotation)
            if field.init
        ]
    if _is_typeddict(annotation):
        hints = typing.get_type_hints(annotation, include_extras=True)
        required_keys: frozenset[str] = getattr(annotation, "__required_keys__", frozenset())
        # The markers are read from the hints too: under ``from __future__ import
        # annotations`` Python 3.11 cannot see them when it builds ``__required_keys__``.
        return [
            (
                key,
                hint,
                typing.get_origin(hint) is typing.Required
                or (typing.get_origin(hint) is not typing.NotRequired and key in required_keys),
            )
            for key, hint in hints.items()
        ]
    return None


def _is_typeddict(annotation: type) -> bool:
    """A TypedDict class, from ``typing`` or ``typing_extensions``."""
    return issubclass(annotation, dict) and hasattr(annotation, "__required_keys__")


def is_pydantic_model(annotation: Any) -> bool:
    """A pydantic model class; pydantic is looked up, never imported."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def inline_refs(schema: dict[str, Any], limit: int = MAX_SCHEMA_NODES) -> dict[str, Any]:
    """A pydantic schema with its ``$defs`` written in place of each ``$ref``, so it can sit
    inside a tool's input schema and be checked like any other part of it.

    Raises ``SchemaLimitError`` as soon as the result would hold more than ``limit`` objects
    and arrays, or nest them deeper than twice ``MAX_SCHEMA_DEPTH``: the work and memory are bounded
    whatever the definitions (``TypeError`` for a recursive ``$ref``, ``KeyError`` for a
    dangling one).
    """
    definitions: dict[str, Any] = schema.pop("$defs", {})
    made = 0

    def resolve(node: Any, active: frozenset[str], depth: int) -> Any:
        nonlocal made
        if not isinstance(node, list | dict):
            return node
        made += 1
        if made > limit:
            raise SchemaLimitError(
                f"holds more than {limit} objects and arrays once its $refs are written in "
                "place; give a smaller schema"
            )
        if depth > 2 * MAX_SCHEMA_DEPTH:  # a schema in a schema: in a dict or list of them
            raise SchemaLimitError(
                f"nests objects and arrays deeper than {2 * MAX_SCHEMA_DEPTH} levels once its "
                "$refs are written in place"
            )
        if isinstance(node, list):
            return [resolve(item, active, depth + 1) for item in node]
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in active:
                raise TypeError(f"recursive model {name} is not supported")
            target = resolve(definitions[name], active | {name}, depth)
            rest = {
                key: resolve(value, active, depth + 1)
                for key, value in node.items()
                if key != "$ref"
            }
            return {**target, **rest}
        return {key: resolve(value, active, depth + 1) for key, value in node.items()}

    resolved: dict[str, Any] = resolve(schema, frozenset(), 0)
    return resolved


def schema_problem(schema: Any, path: str = "$") -> str | None:
    """Where ``schema`` cannot be read by ``check`` — a keyword ``check`` reads holding the
    wrong kind of value (``enum`` not an array, an ``anyOf`` option not a schema...), or
    schemas nested deeper than ``MAX_SCHEMA_DEPTH`` — as ``f"{place} {reason}"``; None when
    ``check`` can read it. Other keywords are not looked at (the check ignores them)."""
    return _schema_problem(schema, path, 0)


def _schema_problem(schema: Any, path: str, depth: int) -> str | None:
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, Mapping):
        return f"{path} must be a schema (an object or a boolean), got {_json_name(schema)}"
    if depth > MAX_SCHEMA_DEPTH:
        return f"{path} nests schemas deeper than {MAX_SCHEMA_DEPTH} levels"
    kind = schema.get("type")
    if kind is not None and not (
        isinstance(kind, str)
        or (isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind))
    ):
        return f"{path}.type must be a type name or an array of them, got {_short(kind)}"
    if "enum" in schema and not isinstance(schema["enum"], list):
        return f"{path}.enum must be an array, got {_json_name(schema['enum'])}"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(k, str) for k in required):
        return f"{path}.required must be an array of property names, got {_short(required)}"
    inner: list[tuple[Any, str]] = []
    if "anyOf" in schema:
        options = schema["anyOf"]
        if not isinstance(options, list) or not options:
            return f"{path}.anyOf must be a non-empty array of schemas, got {_short(options)}"
        inner += [(option, f"{path}.anyOf[{i}]") for i, option in enumerate(options)]
    if "properties" in schema:
        properties = schema["properties"]
        if not isinstance(properties, Mapping):
            return f"{path}.properties must be an object, got {_json_name(properties)}"
        inner += [(value, f"{path}.properties.{key}") for key, value in properties.items()]
    for keyword in ("additionalProperties", "items"):
        if keyword in schema:
            inner.append((schema[keyword], f"{path}.{keyword}"))
    for node, where in inner:
        problem = _schema_problem(node, where, depth + 1)
        if problem is not None:
            return problem
    return None


class _Refusal(ValueError):
    """A value the converter cannot turn into its type; ``reason`` says why, ``where`` is the
    place inside the value (for a pydantic model's own errors), relative to it."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


def _structure_iso(value: Any, cls: type[Any]) -> Any:
    name = _FORMATS[cls]
    if not isinstance(value, str):
        raise _Refusal(f"must be an ISO 8601 {name} string, got {_json_name(value)}")
    try:
        return cls.fromisoformat(value)
    except ValueError:
        raise _Refusal(f"must be an ISO 8601 {name}, got {_short(value)}") from None


def _structure_pydantic(value: Any, cls: Any) -> Any:
    pydantic = sys.modules["pydantic"]
    try:
        return cls.model_validate(value)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        reason = str(first["msg"])
    raise _Refusal(reason[:1].lower() + reason[1:], where)


@functools.cache
def _converter() -> cattrs.Converter:
    """The converter that turns checked JSON arguments into annotated Python values.

    Unions take the first member whose schema the value fits (as the check read it); field
    keys are the attrs aliases the schema names; ``Sequence[X]`` becomes a list.
    """
    import cattrs

    converter = cattrs.Converter(use_alias=True)
    for cls in _FORMATS:
        converter.register_structure_hook(cls, _structure_iso)
    converter.register_structure_hook_func(is_pydantic_model, _structure_pydantic)
    # The way back (structured output handed on as JSON): a model dumps itself, a date is
    # its ISO 8601 string.
    converter.register_unstructure_hook_func(
        lambda t: is_pydantic_model(t), lambda model: model.model_dump(mode="json")
    )
    for cls in _FORMATS:
        converter.register_unstructure_hook(cls, lambda value: value.isoformat())
    converter.register_structure_hook_func(
        lambda t: t is object or t is None or t is type(None), lambda value, _: value
    )
    schemas: dict[Any, dict[str, Any]] = {}

    def is_union(annotation: Any) -> bool:
        return typing.get_origin(annotation) in (typing.Union, types.UnionType)

    def structure_union(value: Any, annotation: Any) -> Any:
        for option in typing.get_args(annotation):
            if option is type(None):
                if value is None:
                    return None
                continue
            schema = schemas.get(option)
            if schema is None:
                schema = schemas[option] = _schema_for(option, set())
            if check(schema, value, "") is None:
                return converter.structure(value, option)
        return value

    def is_sequence(annotation: Any) -> bool:
        return typing.get_origin(annotation) is Sequence

    def structure_sequence(value: Any, annotation: Any) -> list[Any]:
        (item,) = typing.get_args(annotation) or (Any,)
        return [converter.structure(v, item) for v in value]

    converter.register_structure_hook_func(is_union, structure_union)
    converter.register_structure_hook_func(is_sequence, structure_sequence)
    return converter


def _structure_problem(error: BaseException, path: str) -> str:
    """``f"{place} {reason}"`` for the first failure inside a structuring error."""
    import cattrs

    def describe(exc: BaseException, _type: Any) -> str:
        if isinstance(exc, _Refusal):
            return f"{exc.where}\x1f{exc.reason}"
        # cattrs' own KeyError for an absent field carries that field's note; any other
        # KeyError (a validator's, a model's) is the type's refusal, reported as such
        notes = getattr(exc, "__notes__", ())
        if isinstance(exc, KeyError) and any(
            exc.args == (getattr(note, "name", None),) for note in notes
        ):
            return "\x1fis missing a required field"
        return f"\x1fis invalid: {describe_exception(exc)}"

    found = cattrs.transform_error(error, path=path, format_exception=describe)
    text, _, where = found[0].rpartition(" @ ") if found else ("", "", path)
    inner, _, reason = text.partition("\x1f")
    return f"{where}{inner} {reason or 'is invalid'}"


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
}


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__


def check(schema: Mapping[str, Any] | bool, value: Any, path: str) -> str | None:
    """The first violation of the JSON-schema subset tools use, or None (``schema_problem``
    says whether a schema is one ``check`` can read). ``True`` takes anything, ``False``
    nothing."""
    if isinstance(schema, bool):
        return None if schema else f"{path} is not allowed here"
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_TYPE_CHECKS.get(n, lambda _v: True)(value) for n in names):
            return f"{path} must be {' or '.join(names)}, got {_json_name(value)}"
    if "enum" in schema and not any(
        (value == option and type(value) is type(option)) or _same_number(value, option)
        for option in schema["enum"]
    ):
        allowed = ", ".join(json.dumps(option) for option in schema["enum"])
        return f"{path} must be one of {allowed}, got {_short(value)}"
    if "anyOf" in schema:
        problems = [check(option, value, path) for option in schema["anyOf"]]
        if all(problems):
            return next(p for p in problems if p)
    if isinstance(value, Mapping):
        properties = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return f"{path} is missing the required argument {key!r}"
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}.{key}"
            if key in properties:
                problem = check(properties[key], item, where)
            elif extra is False:
                problem = f"{path} has an unexpected argument {key!r}"
            elif isinstance(extra, Mapping):
                problem = check(extra, item, where)
            else:
                problem = None
            if problem:
                return problem
    if isinstance(value, list | tuple) and isinstance(schema.get("items"), Mapping | bool):
        for index, item in enumerate(value):
            problem = check(schema["items"], item, f"{path}[{index}]")
            if problem:
                return problem
    return None


def _same_number(a: Any, b: Any) -> bool:
    numeric = (int, float)
    return (
        isinstance(a, numeric)
        and isinstance(b, numeric)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _short(value: Any) -> str:
    text = json.dumps(value, default=repr) if is_json(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def describe_exception(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
