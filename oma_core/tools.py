"""Tools: typed Python functions the model may call, with a JSON-schema input.

``@tool`` reads a function's signature (the types of ``_tool_types``: str, int, float, bool,
``Literal``, ``Enum``, lists and dicts, ``Optional``, datetimes, attrs classes, dataclasses,
TypedDicts, pydantic models, ``Annotated[T, "description"]``) and docstring (first paragraph:
the description; an ``Args:`` section: per-parameter descriptions). The model's arguments are
checked against the schema before the call, then turned into the annotated types; a mismatch,
an unknown tool or a tool that raises becomes an ``is_error`` tool result the model reads, never
a crash.

A **toolset** (``Toolset``: an object with an async ``list_tools()``, e.g. an MCP server from
oma-mcp) may stand in ``AgentConfig.tools`` beside functions and tools. Its tools are listed
by the run before every model call (so a server's changed list is seen) and called like any
other tool, through ``oma_tool_call``; its owner (the agent, or the ``OpenMultiAgent``) closes
it. A tool may return a ``ToolOutput`` to say more than a value: an error
result with the tool's own text, or parts.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import json
import math
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, overload, runtime_checkable

import attrs

from ._output import OUTPUT_TOOL_NAME
from ._tool_types import (
    SchemaLimitError,
    check,
    describe_exception,
    inline_refs,
    is_json,
    is_pydantic_model,
    schema_for,
    schema_problem,
    structure,
)
from .errors import InvalidMessageError, ToolError
from .messages import (
    AudioBlock,
    Base64Source,
    DocumentBlock,
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

__all__ = [
    "RESERVED_TOOL_NAMES",
    "TOOL_NAME_PATTERN",
    "Tool",
    "ToolOutput",
    "Toolset",
    "ToolsetEntry",
    "ToolsetSpec",
    "as_tool",
    "call_tool",
    "entry_name",
    "is_toolset",
    "list_toolsets",
    "tool",
    "tool_name_problem",
    "tool_result_content",
]

#: The tool names every provider takes: the intersection of the documented rules (Anthropic,
#: OpenAI and Mistral: ``[a-zA-Z0-9_-]{1,64}``; Gemini: the same, starting with a letter or
#: an underscore; Bedrock: ``[a-zA-Z0-9_-]{1,64}``). A name outside it is never sent.
TOOL_NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", re.ASCII)
#: Names a run gives tools of its own: the output tool of tool-mode structured output.
RESERVED_TOOL_NAMES = frozenset({OUTPUT_TOOL_NAME})

_PART_TYPES = frozenset({"text", "image", "file"})
_MESSAGE_OBJECTS = (
    TextBlock,
    ImageBlock,
    VideoBlock,
    DocumentBlock,
    AudioBlock,
    FilePart,
    ToolUseBlock,
    ToolResultBlock,
    ReasoningBlock,
    LLMMessage,
    Base64Source,
    UrlSource,
)


def _approval_rule(_inst: object, _attribute: object, value: object) -> None:
    if not isinstance(value, bool) and not callable(value):
        raise ToolError(f"needs_approval must be True, False or a callable, got {value!r}")


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
    #: Whether a call waits for a person's decision before it runs (see ``_approvals``):
    #: False, True, or a callable given the call's ``ToolUseBlock`` (sync or async) that says.
    needs_approval: bool | Callable[..., Any] = attrs.field(
        default=False, kw_only=True, repr=False, validator=_approval_rule
    )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly, as if it were not a tool (no checks)."""
        return self.function(*args, **kwargs)

    def definition(self) -> ToolDefinition:
        """The tool as providers see it."""
        return ToolDefinition(self.name, self.description, self.input_schema)

    def check_arguments(self, arguments: Any) -> str | None:
        """The first way ``arguments`` break the input schema, or None when they fit."""
        return check(self.input_schema, arguments, "input")

    def structure_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments for the function: ``arguments`` (which passed
        ``check_arguments``) turned into the annotated Python types.

        Raises ``ValueError`` naming the first place that cannot be turned into its type (a
        date-time that is not ISO 8601, a value a dataclass or pydantic model refuses).
        """
        if self._params is None:
            return dict(arguments)
        return {
            key: structure(value, self._params[key], f"input.{key}")
            for key, value in arguments.items()
            if key in self._params
        }

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        """Run the tool on arguments that passed ``check_arguments``; return what it returned."""
        return await self.run_structured(self.structure_arguments(arguments))

    async def run_structured(self, kwargs: Mapping[str, Any]) -> Any:
        """Run the tool on keyword arguments ``structure_arguments`` made; return what it
        returned. A sync function runs in a worker thread. Kept apart from ``invoke`` so a
        caller tells arguments that cannot be structured from a tool that fails."""
        if self._is_async:
            return await self.function(**kwargs)
        import asyncio

        result = await asyncio.to_thread(self.function, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result


@runtime_checkable
class Toolset(Protocol):
    """Tools listed at run time: an object with an async ``list_tools()``.

    An MCP server (``oma_mcp.MCPToolset``) is one. It goes in ``AgentConfig(tools=[...])``;
    before every model call the run awaits its ``list_tools()`` (under the run's time limit),
    so it should answer from a cache and start what it needs on first use. The tools it
    returns are called like local ones. Its optional ``aclose()`` is called by its owner:
    ``Agent.aclose()``, or ``OpenMultiAgent.aclose()`` for the runs it made (which share
    one toolset), and at the latest when the event loop it was used on shuts down.
    """

    async def list_tools(self) -> Sequence[Tool]:
        """The toolset's tools now (names already prefixed, if the toolset prefixes them)."""
        ...


@attrs.frozen
class ToolsetSpec:
    """A kind of toolset a plugin offers, returned from ``oma_register_toolsets``.

    ``kind`` is what a configuration names (``"mcp"``: the ``mcp`` section of AGENTS.json,
    ``oma run --mcp``); ``factory`` receives that configuration's plain data (a mapping, as
    JSON or a command line gives it) and returns a ``Toolset``, started on first use. It must
    be cheap and import nothing heavy.
    """

    kind: str
    factory: Callable[[Mapping[str, Any]], Toolset]
    description: str = ""


def is_toolset(value: object) -> bool:
    """Whether ``value`` is a toolset (has an async ``list_tools``), not a tool or function."""
    return not isinstance(value, Tool) and inspect.iscoroutinefunction(
        getattr(value, "list_tools", None)
    )


@attrs.frozen
class ToolsetEntry(Tool):
    """A toolset's place among an agent's tools, before its tools are listed.

    ``as_tool(toolset)`` makes one, so a toolset can stand in ``AgentConfig.tools``; the
    agent takes it out of its own tools and the run lists the toolset's tools in its place
    before every model call. Calling it directly is an error result.
    """

    toolset: Any = attrs.field(default=None, kw_only=True, repr=False)


@attrs.frozen
class ToolOutput:
    """What a tool may return to say more than a value.

    ``is_error=True`` makes an error tool result whose text is ``content`` (a str, as error
    results are); otherwise ``content`` is a str or a list of text, image and file parts,
    validated like any tool result.
    """

    content: str | Sequence[Any]
    is_error: bool = False


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
    needs_approval: bool | Callable[..., Any] = False,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    needs_approval: bool | Callable[..., Any] = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    needs_approval: bool | Callable[..., Any] = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a ``Tool``: ``@tool``, ``@tool(name=...)`` or ``tool(fn, ...)``.

    ``needs_approval``: True, or a callable given the call's ``ToolUseBlock`` that returns
    whether this call waits for a person's decision (the run suspends; see "Durable runs and
    approvals"). Raises ``ToolError`` for a signature it cannot describe (``*args``, an
    unsupported type).
    """

    def build(fn: Callable[..., Any]) -> Tool:
        built = _build(fn, name=name, description=description, input_schema=input_schema)
        if needs_approval is False:
            return built
        return attrs.evolve(built, needs_approval=needs_approval)

    return build if function is None else build(function)


def as_tool(value: Tool | Callable[..., Any] | Toolset) -> Tool:
    """``value`` if it is a ``Tool``; a ``ToolsetEntry`` for a toolset; else ``tool(value)``."""
    if isinstance(value, Tool):
        return value
    if is_toolset(value):
        return _entry(value)
    return tool(typing.cast("Callable[..., Any]", value))


def tool_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tool (outside ``TOOL_NAME_PATTERN``, or reserved), or None."""
    if name in RESERVED_TOOL_NAMES:
        return "the name is reserved for the output tool of structured output"
    if TOOL_NAME_PATTERN.fullmatch(name) is None:
        return (
            f"{'the name is empty; ' if not name else ''}a tool's name must match "
            f"{TOOL_NAME_PATTERN.pattern} (ASCII letters, digits, _ and -, at most 64, not "
            "starting with a digit or -) for every provider to take it"
        )
    return None


def _shown_name(name: str) -> str:
    """``name`` as messages show it: quoted and escaped, cut after 40 characters."""
    if len(name) <= 40:
        return repr(name)
    return f"{name[:40]!r}... ({len(name)} characters)"


def toolset_label(toolset: Any) -> str:
    """How errors name a toolset: its ``name``, or its type's."""
    return str(getattr(toolset, "name", None) or type(toolset).__name__)


def entry_name(toolset: Any) -> str:
    """The name of ``toolset``'s ``ToolsetEntry`` (unique to the object)."""
    return f"toolset:{toolset_label(toolset)}#{id(toolset):x}"


def _entry(toolset: Any) -> ToolsetEntry:
    label = toolset_label(toolset)

    async def not_listed(**_: Any) -> ToolOutput:
        return ToolOutput(f"the toolset {label!r} was not listed", is_error=True)

    return ToolsetEntry(
        entry_name(toolset),
        f"the tools of {label}",
        {"type": "object", "properties": {}},
        not_listed,
        None,
        True,
        toolset=toolset,
    )


async def list_toolsets(local: Sequence[str], toolsets: Sequence[Any]) -> dict[str, Tool]:
    """The tools of ``toolsets`` by name, listed now, in order.

    Raises ``ToolError`` when two of them, or one of them and a local tool (``local``: the
    names of the agent's own tools), share a name: a model cannot tell them apart.
    """
    listed: dict[str, Tool] = {}
    owner: dict[str, str] = dict.fromkeys(local, "the agent's own tools")
    for toolset in toolsets:
        label = toolset_label(toolset)
        for found in await toolset.list_tools():
            if not isinstance(found, Tool):
                raise ToolError(
                    f"toolset {label!r} listed {type(found).__name__}, not an oma_core.tools.Tool"
                )
            problem = tool_name_problem(found.name)
            if problem is not None:
                raise ToolError(
                    f"toolset {label!r} listed a tool named {_shown_name(found.name)}: {problem}",
                    tool=found.name,
                )
            if found.name in owner:
                raise ToolError(
                    f"two tools are named {found.name!r}: one from {owner[found.name]}, one "
                    f"from toolset {label!r}; give the toolset a prefix",
                    tool=found.name,
                )
            owner[found.name] = f"toolset {label!r}"
            listed[found.name] = found
    return listed


def _build(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    input_schema: Mapping[str, Any] | None,
) -> Tool:
    if not callable(fn):
        raise ToolError(f"a tool must be a function, got {type(fn).__name__}")
    tool_name = getattr(fn, "__name__", None) if name is None else name
    if name is None and (not isinstance(tool_name, str) or tool_name in ("", "<lambda>")):
        raise ToolError("a tool needs a name: pass tool(fn, name=...)")
    if not isinstance(tool_name, str):
        raise ToolError(f"a tool's name must be a str, got {type(tool_name).__name__}")
    problem = tool_name_problem(tool_name)
    if problem is not None:
        raise ToolError(f"tool {_shown_name(tool_name)}: {problem}", tool=tool_name)
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
        try:
            schema = json.loads(json.dumps(input_schema))  # a private, plain copy
        except (TypeError, ValueError, RecursionError) as error:
            raise ToolError(
                f"tool {tool_name!r}: input_schema must be plain JSON: {describe_exception(error)}",
                tool=tool_name,
            ) from None
        if "$defs" in schema:  # written in place, so every provider can take the schema
            try:
                schema = inline_refs(schema)
            except SchemaLimitError as error:
                raise ToolError(
                    f"tool {tool_name!r}: input_schema {error}", tool=tool_name
                ) from None
            except (TypeError, KeyError):  # a recursive or dangling $ref: left as given
                schema = json.loads(json.dumps(input_schema))
        problem = schema_problem(schema)
        if problem is not None:  # the argument check could not read it: say so now
            raise ToolError(f"tool {tool_name!r}: input_schema {problem}", tool=tool_name)
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
            prop = schema_for(annotation)
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
            if is_json(default):
                prop = {**prop, "default": default}
        properties[param.name] = prop
        params[param.name] = annotation
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return params, schema


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
    if is_pydantic_model(type(value)):
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
        value = await found.run_structured(kwargs)
    except Exception as exc:
        return ToolResultBlock(
            call.id, f"tool {call.name!r} failed: {describe_exception(exc)}", True
        )
    if isinstance(value, ToolOutput):
        if value.is_error:
            text = value.content
            if not isinstance(text, str):  # an error result is a str: the parts' text
                text = "\n".join(getattr(p, "text", "") for p in text) or "the tool failed"
            return ToolResultBlock(call.id, text, True)
        value = value.content
    try:
        content = tool_result_content(value)
    except Exception as exc:  # not JSON, circular, too deep, a video block, ...
        return ToolResultBlock(
            call.id,
            f"tool {call.name!r} returned an unusable result: {describe_exception(exc)}",
            True,
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
