"""Tools: typed Python functions the model may call, with a JSON-schema input.

``@tool`` reads a function's signature (str, int, float, bool, ``Literal``, ``Enum``, list and
dict of those, ``Optional``, datetimes and dates, attrs classes, dataclasses, TypedDicts,
pydantic models, ``Annotated[T, "description"]``) and docstring (first paragraph: the
description; an ``Args:`` section: per-parameter descriptions). The model's arguments are
checked against the schema before the call, then turned into the annotated types by a cattrs
converter; a mismatch, an unknown tool or a tool that raises becomes an ``is_error`` tool result
the model reads, never a crash.

pydantic is never imported here: a pydantic model is recognised only when pydantic is already
loaded (as it is when the tool's own module uses it). cattrs loads on the first tool call.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import inspect
import json
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import attrs

from .errors import InvalidMessageError, ToolError
from .messages import (
    Base64Source,
    FilePart,
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    VideoBlock,
)
from .providers import ToolDefinition

if TYPE_CHECKING:
    import cattrs

__all__ = ["Tool", "as_tool", "call_tool", "tool", "tool_result_content"]

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_PART_TYPES = frozenset({"text", "image", "file"})
_MESSAGE_OBJECTS = (
    TextBlock,
    ImageBlock,
    VideoBlock,
    FilePart,
    ToolUseBlock,
    ToolResultBlock,
    ReasoningBlock,
    LLMMessage,
    Base64Source,
    UrlSource,
)


@attrs.frozen
class Tool:
    """A tool the agent offers the model: ``name``, ``description``, ``input_schema`` and the
    function that runs it (sync functions run in a worker thread so they cannot block the loop).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    function: Callable[..., Any] = attrs.field(repr=False)
    # parameter name -> annotation used to turn JSON arguments into Python values; None when
    # the schema was given explicitly (arguments are passed on as they are)
    _params: Mapping[str, Any] | None = attrs.field(default=None, repr=False, alias="params")
    _is_async: bool = attrs.field(default=False, repr=False, alias="is_async")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as if it were not a tool (no checks)."""
        return self.function(*args, **kwargs)

    def definition(self) -> ToolDefinition:
        """The tool as providers see it."""
        return ToolDefinition(self.name, self.description, self.input_schema)

    def check_arguments(self, arguments: Any) -> str | None:
        """The first way ``arguments`` break the input schema, or None when they fit."""
        return _check(self.input_schema, arguments, "input")

    def structure_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function: ``arguments`` (which passed
        ``check_arguments``) turned into the annotated Python types.

        Raises ``ValueError`` naming the first place that cannot be turned into its type (a
        date-time that is not ISO 8601, a value a dataclass or pydantic model refuses).
        """
        if self._params is None:
            return dict(arguments)
        converter = _converter()
        kwargs: dict[str, Any] = {}
        for key, value in arguments.items():
            if key not in self._params:
                continue
            try:
                kwargs[key] = converter.structure(value, self._params[key])
            except Exception as error:  # cattrs' validation groups, a model's own refusal
                problem = _structure_problem(error, f"input.{key}")
            else:
                continue
            raise ValueError(problem)
        return kwargs

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        """Run the tool on arguments that passed ``check_arguments``; return what it returned."""
        return await self._run(self.structure_arguments(arguments))

    async def _run(self, kwargs: dict[str, Any]) -> Any:
        if self._is_async:
            return await self.function(**kwargs)
        import asyncio

        result = await asyncio.to_thread(self.function, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    function: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a ``Tool``: ``@tool``, ``@tool(name=...)`` or ``tool(fn, ...)``.

    Raises ``ToolError`` for a signature it cannot describe (``*args``, an unsupported type).
    """

    def build(fn: Callable[..., Any]) -> Tool:
        return _build(fn, name=name, description=description, input_schema=input_schema)

    return build if function is None else build(function)


def as_tool(value: Tool | Callable[..., Any]) -> Tool:
    """``value`` if it is a ``Tool``, else ``tool(value)``."""
    return value if isinstance(value, Tool) else tool(value)


def _build(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    input_schema: Mapping[str, Any] | None,
) -> Tool:
    if not callable(fn):
        raise ToolError(f"a tool must be a function, got {type(fn).__name__}")
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or not isinstance(tool_name, str) or tool_name == "<lambda>":
        raise ToolError("a tool needs a name: pass tool(fn, name=...)")
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )
    if input_schema is not None:
        if not isinstance(input_schema, Mapping) or input_schema.get("type") != "object":
            raise ToolError(
                f"tool {tool_name!r}: input_schema must be a JSON schema of type object",
                tool=tool_name,
            )
        schema = json.loads(json.dumps(input_schema))  # a private, plain copy
        return Tool(tool_name, description or summary, schema, fn, None, is_async)
    params, schema = _signature_schema(fn, tool_name, arg_docs)
    return Tool(tool_name, description or summary, schema, fn, params, is_async)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    paragraphs = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)
    summary = " ".join(paragraphs[0].split()) if paragraphs and paragraphs[0] else ""
    arg_docs: dict[str, str] = {}
    section = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?)+)", doc, re.M)
    if section:
        current: str | None = None
        for line in section.group(1).splitlines():
            match = re.match(r"\s+(\*{0,2}\w+)(?:\s*\(.*?\))?:\s*(.*)", line)
            if match and (current is None or len(line) - len(line.lstrip()) <= 8):
                current = match.group(1)
                arg_docs[current] = match.group(2).strip()
            elif current is not None and line.strip():
                arg_docs[current] = f"{arg_docs[current]} {line.strip()}".strip()
    return summary, arg_docs


def _signature_schema(
    fn: Callable[..., Any], tool_name: str, arg_docs: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
        signature = inspect.signature(fn)
    except (NameError, TypeError, ValueError) as exc:
        raise ToolError(f"tool {tool_name!r}: cannot read its signature: {exc}") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolError(
                f"tool {tool_name!r}: parameter {param.name!r} must be passable by keyword "
                "(no *args, **kwargs or positional-only parameters); give input_schema instead",
                tool=tool_name,
            )
        annotation = hints.get(param.name, Any)
        try:
            prop = _schema_for(annotation, set())
        except TypeError as exc:
            raise ToolError(
                f"tool {tool_name!r}: parameter {param.name!r}: {exc}", tool=tool_name
            ) from exc
        if param.name in arg_docs and "description" not in prop:
            prop = {**prop, "description": arg_docs[param.name]}
        if param.default is param.empty:
            required.append(param.name)
        else:
            default = param.default
            if isinstance(default, enum.Enum):  # the schema speaks JSON: the member's value
                default = default.value
            elif isinstance(default, datetime.date | datetime.time):
                default = default.isoformat()
            if _is_json(default):
                prop = {**prop, "default": default}
        properties[param.name] = prop
        params[param.name] = annotation
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return params, schema


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
    if _is_pydantic_model(annotation):
        return _inline_refs(annotation.model_json_schema())
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


def _is_pydantic_model(annotation: Any) -> bool:
    """A pydantic model class; pydantic is looked up, never imported."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(annotation, type)
        and issubclass(annotation, pydantic.BaseModel)
    )


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic schema with its ``$defs`` written in place of each ``$ref``, so it can sit
    inside a tool's input schema and be checked like any other part of it."""
    definitions: dict[str, Any] = schema.pop("$defs", {})

    def resolve(node: Any, active: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, active) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in active:
                raise TypeError(f"recursive model {name} is not supported")
            target = resolve(definitions[name], active | {name})
            rest = {key: resolve(value, active) for key, value in node.items() if key != "$ref"}
            return {**target, **rest}
        return {key: resolve(value, active) for key, value in node.items()}

    resolved: dict[str, Any] = resolve(schema, frozenset())
    return resolved


class _Refusal(ValueError):
    """A value the converter cannot turn into its type; ``reason`` says why, ``where`` is the
    place inside the value (for a pydantic model's own errors), relative to it."""

    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


def _structure_iso(value: Any, cls: type[Any]) -> Any:
    name = {datetime.datetime: "date-time", datetime.date: "date", datetime.time: "time"}[cls]
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
    converter.register_structure_hook_func(_is_pydantic_model, _structure_pydantic)
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
            if _check(schema, value, "") is None:
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
        if isinstance(exc, KeyError):
            return "\x1fis missing a required field"
        return f"\x1fis invalid: {_describe(exc)}"

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


def _check(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    """The first violation of the JSON-schema subset tools use, or None."""
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
        problems = [_check(option, value, path) for option in schema["anyOf"]]
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
                problem = _check(properties[key], item, where)
            elif extra is False:
                problem = f"{path} has an unexpected argument {key!r}"
            elif isinstance(extra, Mapping):
                problem = _check(extra, item, where)
            else:
                problem = None
            if problem:
                return problem
    if isinstance(value, list | tuple) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problem = _check(schema["items"], item, f"{path}[{index}]")
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
    text = json.dumps(value, default=repr) if _is_json(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _json_default(value: Any) -> Any:
    if isinstance(value, _MESSAGE_OBJECTS):  # a message object never turns into JSON text
        raise TypeError(
            f"a tool result cannot carry {_kind_of(value)}; it carries a str, JSON, or a list "
            "of text, image and file parts"
        )
    if isinstance(value, enum.Enum):
        return value.value
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if _is_pydantic_model(type(value)):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def tool_result_content(value: Any) -> str | list[Any]:
    """What a tool returned, as tool-result content: a str stays a str; a text/image/file part
    or a non-empty list of them (objects or dicts) is passed on as parts to validate; any other
    JSON value (attrs instances and enums included) is dumped to a JSON string.

    Raises ``TypeError`` for a value that is not JSON, and for message objects a tool result
    cannot carry (a video block, a tool call, ...): media never turns into text silently.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, TextBlock | ImageBlock | FilePart):  # one part: e.g. image_base64(...)
        return [value]
    if isinstance(value, Mapping) and value.get("type") in ("image", "file") and "source" in value:
        return [value]  # one media part as a dict: never dumped into text
    if isinstance(value, list | tuple) and value and all(_is_part(p) for p in value):
        return list(value)
    if isinstance(value, list | tuple) and any(isinstance(p, _MESSAGE_OBJECTS) for p in value):
        odd = next(p for p in value if not _is_part(p))
        raise TypeError(
            f"a tool result cannot carry {_kind_of(odd)}; a list of parts holds text, image and "
            "file parts only"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeError("a tool result must be JSON; got a non-finite float")
    return json.dumps(value, ensure_ascii=False, default=_json_default, allow_nan=False)


def _kind_of(value: Any) -> str:
    kind = getattr(value, "type", None)
    if isinstance(value, _MESSAGE_OBJECTS) and isinstance(kind, str):
        return f"a {kind} block"
    return f"a value of type {type(value).__name__}"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_part(value: Any) -> bool:
    if isinstance(value, TextBlock | ImageBlock | FilePart):
        return True
    return isinstance(value, Mapping) and value.get("type") in _PART_TYPES


async def call_tool(tools: Mapping[str, Tool], call: ToolUseBlock) -> ToolResultBlock:
    """Run one tool call; every failure becomes an ``is_error`` result the model reads.

    An unknown tool, arguments that break the schema, a tool that raises and a result that is
    not JSON or not valid tool-result content are all reported to the model, naming the
    problem. Cancellation propagates.
    """
    found = tools.get(call.name)
    if found is None:
        known = ", ".join(sorted(tools)) or "none"
        return ToolResultBlock(
            call.id, f"unknown tool {call.name!r}; available tools: {known}", True
        )
    arguments = call.plain_input()  # the tool's own mutable copy
    problem = found.check_arguments(arguments)
    if problem is not None:
        return ToolResultBlock(
            call.id, f"invalid arguments for tool {call.name!r}: {problem}", True
        )
    try:
        kwargs = found.structure_arguments(arguments)
    except ValueError as exc:
        return ToolResultBlock(call.id, f"invalid arguments for tool {call.name!r}: {exc}", True)
    try:
        value = await found._run(kwargs)
    except Exception as exc:
        return ToolResultBlock(call.id, f"tool {call.name!r} failed: {_describe(exc)}", True)
    try:
        content = tool_result_content(value)
    except Exception as exc:  # not JSON, circular, too deep, a video block, ...
        return ToolResultBlock(
            call.id, f"tool {call.name!r} returned an unusable result: {_describe(exc)}", True
        )
    if isinstance(content, str):
        return ToolResultBlock(call.id, content)
    from .validation import load_messages

    part = {"type": "tool_result", "tool_use_id": call.id, "content": content}
    try:
        (message,) = load_messages([{"role": "user", "content": [part]}])
    except InvalidMessageError as exc:
        return ToolResultBlock(
            call.id, f"tool {call.name!r} returned invalid content: {exc.reason}", True
        )
    block = message.content[0]
    assert isinstance(block, ToolResultBlock)
    return block
