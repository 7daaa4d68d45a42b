"""Structured output on the Messages API: the native ``output_config.format`` and the forced tool.

Native mode (``ProviderRequest.output.mode == "native"``) sends
``output_config: {"format": {"type": "json_schema", "schema": ...}}`` — the Messages API's own
structured outputs (generally available, no beta header; the field of the installed SDK's
``OutputConfigParam`` / ``JSONOutputFormatParam``); the reply's text is the JSON. Anthropic
documents it for Claude Sonnet 4.5, Opus 4.5, Haiku 4.5 and the models after them; an older
model (``_WITHOUT_NATIVE``) is refused locally with the way out: ``output_mode="tool"``.

Tool mode sends one more tool, the output, and ``tool_choice`` ``{"type": "tool", "name": ...}``
(``{"type": "any"}`` when the agent has tools of its own, so it may call them first). Every model
with tool use has it. Extended thinking does not allow a forced tool choice, so tool mode with
``thinking`` enabled is refused locally.

The schema is made what structured outputs take: every object closed
(``additionalProperties: false``, which the API requires), keywords it does not support moved
into the description (as the SDK's own ``transform_schema`` does), and what it cannot take
refused with ``OutputTypeError``: an open dict, a recursive ``$ref``.

Native mode is also held to the "schema complexity limits" Anthropic documents for every
request with ``output_config.format`` or a ``strict: true`` tool (the structured outputs page
as published 2026-09-20): at most 20 strict tools, and across the output schema and every
strict tool's schema together at most 24 optional properties and 16 properties with a union
type (``anyOf``, or a list of types). Past one, the request is refused locally (``LIMITS``,
counted by the toolkit's ``SchemaLimits``) with the way out: fewer optional or nullable fields,
or tool mode, whose output tool is not strict and so not held to them. Pure functions, no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oma_core.errors import OutputTypeError
from oma_core.toolkit import OutputRequest, SchemaLimits

from .capabilities import DISPLAY_NAME

__all__ = ["LIMITS", "MAX_STRICT_TOOLS", "add_output", "output_schema"]

#: Anthropic's documented limits, over all the strict schemas of one request together.
LIMITS = SchemaLimits(max_optional=24, max_unions=16)
#: Anthropic's documented limit on the tools with ``strict: true`` in one request.
MAX_STRICT_TOOLS = 20

#: Model name prefixes of Claude models without native structured outputs.
_WITHOUT_NATIVE = (
    "claude-2",
    "claude-instant",
    "claude-3",
    "claude-sonnet-4-0",
    "claude-sonnet-4-2025",
    "claude-opus-4-0",
    "claude-opus-4-1",
    "claude-opus-4-2025",
)
#: Keywords structured outputs take as they are.
_KEPT = frozenset(
    {
        "type",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "description",
        "title",
        "$defs",
        "$ref",
    }
)
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)


def _refuse(name: str, reason: str) -> OutputTypeError:
    return OutputTypeError(name, f"{DISPLAY_NAME} structured output cannot take {reason}")


def output_schema(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``schema`` as structured outputs take it (a new dict), or ``OutputTypeError``."""
    defs = schema.get("$defs")
    if isinstance(defs, Mapping):
        _refuse_recursion(defs, name)
    return _node(schema, "$", name)


def _kept(key: str, value: Any) -> bool:
    if key == "format":
        return value in _FORMATS
    if key == "minItems":
        return value in (0, 1)
    return key in _KEPT


def _node(schema: Any, path: str, name: str) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise _refuse(name, f"{path}: a schema must be an object")
    out: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in schema.items():
        if _kept(key, value):
            out[key] = value
        else:
            moved[key] = value
    if out.get("type") == "object" or "properties" in out:
        extra = out.get("additionalProperties")
        if extra not in (None, False) or (extra is None and not out.get("properties")):
            raise _refuse(
                name,
                f"{path}: an open dict (keys not known in advance); give it fixed properties",
            )
        out["properties"] = {
            key: _node(sub, f"{path}.{key}", name)
            for key, sub in (out.get("properties") or {}).items()
        }
        out["additionalProperties"] = False
    if isinstance(out.get("items"), Mapping):
        out["items"] = _node(out["items"], f"{path}[]", name)
    for combined in ("anyOf", "allOf"):
        if isinstance(out.get(combined), list):
            out[combined] = [_node(option, path, name) for option in out[combined]]
    if isinstance(out.get("$defs"), Mapping):
        out["$defs"] = {k: _node(v, f"$defs.{k}", name) for k, v in out["$defs"].items()}
    if moved:  # not enforced by the service: said in the description, checked by oma
        said = ", ".join(f"{k}: {v}" for k, v in moved.items())
        description = out.get("description")
        out["description"] = f"{description}\n\n{{{said}}}" if description else f"{{{said}}}"
    return out


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref.removeprefix("#/$defs/"))
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _refuse_recursion(defs: Mapping[str, Any], name: str) -> None:
    """Structured outputs take no recursive schema: refuse a ``$defs`` entry that reaches
    itself."""
    edges = {key: _refs(value) for key, value in defs.items()}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            current = todo.pop()
            if current == start:
                raise _refuse(name, f"a recursive schema ($defs.{start} refers to itself)")
            if current not in seen and current in edges:
                seen.add(current)
                todo.extend(edges[current])


def _check_limits(schema: Mapping[str, Any], optional: Mapping[str, Any], name: str) -> None:
    """Refuse native output past Anthropic's documented schema limits, counting the output
    schema with the strict tools the options gave (the limits hold for them all together)."""
    tools = optional.get("tools")
    strict = [
        t
        for t in (tools if isinstance(tools, list) else [])
        if isinstance(t, Mapping) and t.get("strict") is True
    ]
    if len(strict) > MAX_STRICT_TOOLS:
        raise _refuse(
            name,
            f"native output with {len(strict)} strict tools (`strict: true`) in the request; "
            f"the limit is {MAX_STRICT_TOOLS}",
        )
    schemas = [("$", schema)]
    for tool in strict:
        if isinstance(tool.get("input_schema"), Mapping):
            schemas.append((f"tools.{tool.get('name')}", tool["input_schema"]))

    def refuse(place: str, reason: str) -> OutputTypeError:
        return _refuse(
            name,
            f"{place}: {reason} (counting every strict schema of the request); make fewer "
            'fields optional or nullable, or set output_mode="tool", whose output tool is not '
            "held to these limits",
        )

    LIMITS.check(schemas, refuse)


def add_output(optional: dict[str, Any], output: OutputRequest, model: str) -> None:
    """Put ``output`` on the wire: into ``optional`` (the body's keys after ``model``); it
    wins over a ``tool_choice`` or ``output_config.format`` the options gave."""
    schema = output_schema(output.schema, output.name)
    if output.mode == "native":
        if model.startswith(_WITHOUT_NATIVE):
            raise _refuse(
                output.name,
                f"native output on {model}: the model has no structured outputs (Claude "
                'Sonnet 4.5, Opus 4.5, Haiku 4.5 and later have); set output_mode="tool" '
                "(AgentConfig or RunSettings) for a forced tool call instead",
            )
        _check_limits(schema, optional, output.name)
        config = dict(optional.get("output_config") or {})
        config["format"] = {"type": "json_schema", "schema": schema}
        optional["output_config"] = config
        return
    thinking = optional.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive"):
        raise _refuse(
            output.name,
            "tool mode with extended thinking: a forced tool choice is refused while thinking "
            'is on; use output_mode="native" or turn thinking off',
        )
    tool: dict[str, Any] = {"name": output.name}
    if output.description:
        tool["description"] = output.description
    tool["input_schema"] = schema
    own_tools = bool(optional.get("tools"))
    optional["tools"] = [*optional.get("tools", []), tool]
    optional["tool_choice"] = (
        {"type": "any"} if own_tools else {"type": "tool", "name": output.name}
    )
