"""What an MCP server lists, made safe to offer a model: each listed tool becomes an oma
``Tool``, or is left out with a warning that says why.

A listing is untrusted input: its names, schemas and descriptions go to the provider on every
model call, and its schemas are expanded and read by the argument check. So:

- a name no provider takes (outside ``TOOL_NAME_PATTERN``: ESC, spaces, 10,000 characters) is
  offered under a safe name (other characters as ``_``, cut with a hash of the name when too
  long or taken); the server is still called by its own name. An empty name, the name of the
  run's output tool (``final_result``) and a second tool of one name are left out;
- a schema that breaks JSON Schema (checked against its meta-schema, 2020-12 unless it names
  another), is larger than ``MAX_SCHEMA_CHARS`` or grows past the core's bound once its
  ``$ref``s are written in place leaves its tool out: never the run;
- a description is cut at ``MAX_DESCRIPTION`` characters, with a marker;
- at most ``MAX_TOOLS`` tools are taken from one server;
- a tool that runs only as a task (MCP 2025-11-25, ``execution.taskSupport: "required"``) is
  left out with a debug line: oma calls tools directly, and such a call always fails.

Each tool renamed or left out is logged once per listing (the toolset lists again only when
the server says its list changed, or after a restart).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import mcp_types as types

from oma_core import tool
from oma_core.errors import ToolError
from oma_core.toolkit import ToolOutput
from oma_core.tools import RESERVED_TOOL_NAMES, TOOL_NAME_PATTERN, Tool

__all__ = ["MAX_DESCRIPTION", "MAX_SCHEMA_CHARS", "MAX_TOOLS", "offered_tools"]

_log = logging.getLogger("oma.mcp")

#: The most tools taken from one server (the rest are left out, with a warning).
MAX_TOOLS = 500
#: The longest description sent for a tool, in characters (8 KiB); a longer one is cut.
MAX_DESCRIPTION = 8 * 1024
#: The largest input schema taken, in characters of its JSON (256 KiB).
MAX_SCHEMA_CHARS = 256 * 1024

#: ``MCPToolset.call``: calls the server's tool by its own name.
Caller = Callable[[str, Mapping[str, Any]], Awaitable[ToolOutput]]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_LIMIT = 64  # TOOL_NAME_PATTERN's length


def offered_tools(
    server: str, prefix: str | None, listed: Sequence[types.Tool], call: Caller
) -> list[Tool]:
    """The tools of ``listed`` (one listing of ``server``) to offer the model, in order, each
    named ``prefix_name`` (or its safe form) and calling the server by its own name."""
    if len(listed) > MAX_TOOLS:
        _log.warning(
            "MCP server %r lists more than %d tools; the first %d are offered, the rest left out",
            server,
            MAX_TOOLS,
            MAX_TOOLS,
        )
    kept: list[tuple[types.Tool, str]] = []  # a listed tool, and its prefixed name
    remotes: set[str] = set()
    for item in listed[:MAX_TOOLS]:
        remote = item.name
        if item.execution is not None and item.execution.task_support == "required":
            _log.debug(
                "MCP server %r: tool %s runs only as a task (taskSupport: required); oma calls "
                "tools directly, so it is not offered",
                server,
                _shown(remote),
            )
        elif not remote:
            _log.warning("MCP server %r lists a tool with an empty name: left out", server)
        elif remote in remotes:
            _log.warning(
                "MCP server %r lists tool %s twice: the first is offered", server, _shown(remote)
            )
        else:
            remotes.add(remote)
            kept.append((item, remote if prefix is None else f"{prefix}_{remote}"))
    taken = {local for _, local in kept if _fits(local)}
    offered: list[Tool] = []
    for item, local in kept:
        name = _offered_name(server, item.name, local, taken)
        if name is not None:
            made = _tool(server, item, name, call)
            if made is not None:
                offered.append(made)
    return offered


def _fits(name: str) -> bool:
    return TOOL_NAME_PATTERN.fullmatch(name) is not None and name not in RESERVED_TOOL_NAMES


def _offered_name(server: str, remote: str, local: str, taken: set[str]) -> str | None:
    """``local`` when every provider takes it; else a safe name not in ``taken`` (added to
    it), logged; None (logged) for a reserved name or one left without a safe form."""
    if local in RESERVED_TOOL_NAMES:
        _log.warning(
            "MCP server %r lists tool %s, the name of the output tool of structured output: "
            "left out (give the toolset a prefix to offer it)",
            server,
            _shown(remote),
        )
        return None
    if TOOL_NAME_PATTERN.fullmatch(local) is not None:
        return local
    safe = _UNSAFE.sub("_", local)
    if not (safe[:1].isalpha() or safe[:1] == "_"):
        safe = f"_{safe}"
    if len(safe) > _LIMIT or safe in taken or safe in RESERVED_TOOL_NAMES:
        digest = hashlib.sha256(local.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[: _LIMIT - 9]}_{digest}"
    if safe in taken:
        _log.warning(
            "MCP server %r lists tool %s, a name providers refuse, and its safe form %r is "
            "taken: left out",
            server,
            _shown(local),
            safe,
        )
        return None
    taken.add(safe)
    _log.warning(
        "MCP server %r lists tool %s, a name providers refuse (it must match %s): offered to "
        "the model as %r; the server is still called by its own name",
        server,
        _shown(local),
        TOOL_NAME_PATTERN.pattern,
        safe,
    )
    return safe


def _tool(server: str, item: types.Tool, name: str, call: Caller) -> Tool | None:
    """The oma tool for ``item`` offered as ``name``, or None (logged) when its schema cannot
    be used."""
    remote = item.name
    schema = item.input_schema
    problem = _schema_problem(schema)
    if problem is None:
        description = _description(server, remote, item.description or item.title or "")

        async def run(**arguments: Any) -> ToolOutput:
            return await call(remote, arguments)

        try:
            return tool(run, name=name, description=description, input_schema=schema)
        except ToolError as error:  # the core's reading: its $ref bound, what check reads
            problem = str(error).removeprefix(f"tool {name!r}: input_schema ")
    _log.warning(
        "MCP server %r lists tool %s with an input schema that cannot be used: %s; the tool "
        "is left out",
        server,
        _shown(remote),
        problem,
    )
    return None


def _schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot be offered (too large, or not valid against its JSON Schema
    meta-schema, with the place), or None."""
    try:
        size = len(json.dumps(schema, separators=(",", ":")))
    except RecursionError:
        return "it nests too deep to read"
    if size > MAX_SCHEMA_CHARS:
        return f"its JSON has {size} characters, more than {MAX_SCHEMA_CHARS}"
    # loaded on first use (not with oma_mcp), as untyped: jsonschema ships no type stubs
    jsonschema: Any = importlib.import_module("jsonschema")
    draft = jsonschema.Draft202012Validator  # MCP's default, and for an unknown "$schema"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with contextlib.suppress(TypeError):  # "$schema": [] (the check below says so)
            draft = jsonschema.validators.validator_for(schema, default=draft)
    # the meta-schema's structure only, not its formats: a pattern in ECMA-262 syntax
    # (``\p{L}``) is no Python regex, and is still one the services take
    meta = draft(draft.META_SCHEMA)
    try:
        error = jsonschema.exceptions.best_match(meta.iter_errors(schema))
    except RecursionError:
        return "it nests too deep to check"
    if error is not None:
        return f"{_cut(str(error.json_path), 200)} {_cut(str(error.message), 200)}"
    return None


def _description(server: str, remote: str, text: str) -> str:
    if len(text) <= MAX_DESCRIPTION:
        return text
    _log.warning(
        "MCP server %r lists tool %s with a description of %d characters: cut to %d",
        server,
        _shown(remote),
        len(text),
        MAX_DESCRIPTION,
    )
    return f"{text[:MAX_DESCRIPTION]} [... cut: {len(text) - MAX_DESCRIPTION} more characters]"


def _shown(name: str) -> str:
    """A server's name for a tool as logs show it: quoted and escaped, cut after 40."""
    if len(name) <= 40:
        return repr(name)
    return f"{name[:40]!r}... ({len(name)} characters)"


def _cut(text: str, limit: int) -> str:
    text = ascii(text)[1:-1] if not text.isprintable() else text
    return text if len(text) <= limit else f"{text[:limit]}..."
