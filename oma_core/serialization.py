"""Messages to JSON-shaped data and back, through one cattrs converter.

``dump_messages`` gives the shape of DESIGN section 2: plain dicts and lists, a ``type`` key
first in every block and source, optional keys left out when they are None or False. Media
strings are shared, not copied. ``load_messages(dump_messages(m)) == m``.

The converter unstructures with cattrs' generated code and structures through the parser
(``_model``), the one description of the wire shape: a converter never builds an invalid message
and never knows a key the parser does not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from ._checks import DEFAULT_LIMITS, join
from ._model import parse_block, parse_message, parse_part, tag_of
from ._sources import Budget, parse_source
from .errors import InvalidMessageError
from .messages import (
    BLOCK_TYPES,
    Base64Source,
    ContentBlock,
    FilePart,
    LLMMessage,
    MediaSource,
    ToolResultBlock,
    ToolResultPart,
    ToolUseBlock,
    UrlSource,
    thaw_json,
)
from .validation import load_messages

__all__ = ["dump_messages", "message_converter"]

_TAGGED: tuple[type, ...] = (
    Base64Source,
    UrlSource,
    *(kind.cls for kind in BLOCK_TYPES.values()),
    FilePart,
)


def _budget() -> Budget:
    return Budget(DEFAULT_LIMITS)


def _structure_as(cls: type) -> Callable[[Any, Any], Any]:
    """A structure hook for one class: the parser, on a mapping whose ``type`` may be left out."""
    tag = tag_of(cls)

    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, Mapping) and "type" not in value:
            value = {"type": tag, **value}
        if cls is Base64Source or cls is UrlSource:
            built: object = parse_source(value, "source")
        elif cls is FilePart:
            built = parse_part(value, "part")
        else:
            built = parse_block(value, tag, None, _budget())
        if not isinstance(built, cls):
            raise InvalidMessageError(join(tag, "type"), f'must be "{tag}"')
        return built

    return structure


def _make_converter() -> cattrs.Converter:
    """Build the converter: generated unstructuring with the ``type`` tag first, and
    structuring through the parser (the same checks as ``load_messages``)."""
    conv = cattrs.Converter(omit_if_default=True)
    hooks: dict[type, Callable[[Any], Any]] = {}

    def any_tagged(value: Any) -> Any:
        hook = hooks.get(type(value))
        return hook(value) if hook is not None else conv.unstructure(value)

    def tool_result_content(content: Any) -> Any:
        return content if isinstance(content, str) else [any_tagged(p) for p in content]

    def message_content(content: Any) -> list[Any]:
        return [any_tagged(b) for b in content]

    overrides: dict[type, dict[str, Any]] = {
        ToolResultBlock: {"content": override(unstruct_hook=tool_result_content)},
        ToolUseBlock: {"input": override(unstruct_hook=thaw_json)},
    }
    for cls in _TAGGED:
        fields: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=True, **overrides.get(cls, {})
        )

        def unstructure(
            value: Any, tag: str = tag_of(cls), fields: Callable[[Any], Any] = fields
        ) -> dict[str, Any]:
            return {"type": tag, **fields(value)}

        hooks[cls] = unstructure
        conv.register_unstructure_hook(cls, unstructure)
        conv.register_structure_hook(cls, _structure_as(cls))
    conv.register_unstructure_hook(
        LLMMessage,
        make_dict_unstructure_fn(LLMMessage, conv, content=override(unstruct_hook=message_content)),
    )

    conv.register_structure_hook(MediaSource, lambda value, _: parse_source(value, "source"))
    conv.register_structure_hook(ToolResultPart, lambda value, _: parse_part(value, "part"))
    conv.register_structure_hook(
        ContentBlock, lambda value, _: parse_block(value, "block", None, _budget())
    )
    conv.register_structure_hook(
        LLMMessage, lambda value, _: parse_message(value, "message", _budget())
    )
    conv.register_structure_hook_func(
        lambda t: t == tuple[LLMMessage, ...],
        lambda value, _: load_messages(value, allow_empty=True),
    )
    return conv


@functools.cache
def message_converter() -> cattrs.Converter:
    """The one converter for messages, built on first use (importing oma stays cheap)."""
    return _make_converter()


def dump_messages(messages: object) -> list[dict[str, Any]]:
    """The JSON shape of ``messages`` (objects or dicts): fresh dicts and lists.

    Mutating the result changes no message; base64 and URL strings are shared, not copied.
    """
    loaded = load_messages(messages, allow_empty=True)
    hook = message_converter().get_unstructure_hook(LLMMessage)
    return [hook(m) for m in loaded]
