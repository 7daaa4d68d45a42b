"""Messages to JSON-shaped data and back, through one cattrs converter.

``dump_messages`` gives the shape of DESIGN section 2: plain dicts and lists, a ``type`` key
first in every block and source, optional keys left out when they are None or False. Media
strings are shared, not copied. ``load_messages(dump_messages(m)) == m``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import cattrs
from cattrs.gen import make_dict_unstructure_fn, override
from cattrs.strategies import configure_tagged_union

from ._checks import DEFAULT_LIMITS, thaw_json, type_name
from .errors import InvalidMessageError
from .messages import (
    _BLOCK_TYPES,
    _TAG_OF,
    Base64Source,
    ContentBlock,
    FilePart,
    ImageBlock,
    LLMMessage,
    MediaSource,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultPart,
    ToolUseBlock,
    UrlSource,
    VideoBlock,
    _block_from,
    _Budget,
    _message,
    _part,
    _source,
)
from .validation import load_messages

__all__ = ["dump_messages", "message_converter"]

_TAGS: dict[type, str] = {Base64Source: "base64", UrlSource: "url", **_TAG_OF}


def _tag(cls: type) -> str:
    return _TAGS[cls]


def _make_converter() -> cattrs.Converter:
    """Build the converter: a tagged union on ``type`` for sources, parts and blocks.

    Unstructuring is cattrs' generated code; structuring goes through validation (the
    same checks as ``load_messages``), so a converter never builds an invalid message.
    """
    conv = cattrs.Converter(omit_if_default=True)

    def tagged(cls: type, **overrides: Any) -> None:
        fields: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=True, **overrides
        )
        tag = _TAGS[cls]

        def unstructure(value: Any) -> dict[str, Any]:
            return {"type": tag, **fields(value)}

        conv.register_unstructure_hook(cls, unstructure)

    # Structuring validates: each hook runs the checks of load_messages for its shape.
    def budget() -> _Budget:
        return _Budget(DEFAULT_LIMITS)

    def structure_block(tag: str) -> Callable[[Any, Any], Any]:
        def structure(value: Any, _: Any) -> Any:
            if tag in ("base64", "url"):
                return _source(_with_type(value, tag), "source")
            if tag == "file":
                return _part(_with_type(value, tag), "part")
            return _block_from(_with_type(value, tag), tag, tag, budget())

        return structure

    for cls, tag in _TAGS.items():
        conv.register_structure_hook(cls, structure_block(tag))
    conv.register_structure_hook(LLMMessage, lambda value, _: _message(value, "message", budget()))
    conv.register_structure_hook_func(
        lambda t: t == tuple[LLMMessage, ...],
        lambda value, _: load_messages(value, allow_empty=True),
    )

    tagged(Base64Source)
    tagged(UrlSource)
    configure_tagged_union(MediaSource, conv, tag_generator=_tag, tag_name="type")
    tagged(TextBlock)
    tagged(ImageBlock)
    tagged(FilePart)
    configure_tagged_union(ToolResultPart, conv, tag_generator=_tag, tag_name="type")
    part: Callable[[Any], Any] = conv.get_unstructure_hook(ToolResultPart)

    def tool_result_content(content: Any) -> Any:
        return content if isinstance(content, str) else [part(p) for p in content]

    tagged(ToolResultBlock, content=override(unstruct_hook=tool_result_content))
    tagged(ToolUseBlock, input=override(unstruct_hook=thaw_json))
    tagged(VideoBlock)
    tagged(ReasoningBlock)
    configure_tagged_union(ContentBlock, conv, tag_generator=_tag, tag_name="type")
    block: Callable[[Any], Any] = conv.get_unstructure_hook(ContentBlock)

    def message_content(content: Any) -> list[Any]:
        return [block(b) for b in content]

    conv.register_unstructure_hook(
        LLMMessage,
        make_dict_unstructure_fn(LLMMessage, conv, content=override(unstruct_hook=message_content)),
    )
    # The unions dispatch on "type" through validation too, so an unknown tag is an
    # InvalidMessageError rather than a KeyError.
    conv.register_structure_hook(MediaSource, lambda value, _: _source(value, "source"))
    conv.register_structure_hook(ToolResultPart, lambda value, _: _part(value, "part"))
    conv.register_structure_hook(ContentBlock, lambda value, _: _any_block(value, budget()))

    return conv


def _any_block(value: Any, budget: _Budget) -> ContentBlock:
    if isinstance(value, Mapping):
        tag = value.get("type")
        if isinstance(tag, str) and tag in _BLOCK_TYPES:
            return _block_from(value, tag, "block", budget)
    names = ", ".join(f'"{t}"' for t in _BLOCK_TYPES)
    raise InvalidMessageError("block.type", f"must be one of {names}")


def _with_type(value: Any, tag: str) -> Any:
    """The mapping with its ``type`` (cattrs may hand a member hook a dict without it)."""
    if isinstance(value, Mapping) and "type" not in value:
        return {"type": tag, **value}
    if not isinstance(value, Mapping):
        raise InvalidMessageError(tag, f"must be a mapping, got {type_name(value)}")
    return value


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
