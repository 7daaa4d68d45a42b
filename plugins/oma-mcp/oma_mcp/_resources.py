"""An MCP server's resources and prompts as oma types, and its refusals as a typed error.

``MCPToolset.list_resources``/``list_resource_templates``/``list_prompts`` give
``Resource``/``ResourceTemplate``/``Prompt`` descriptions; ``read_resource`` gives content
blocks (text as ``TextBlock``; an image, audio or document blob as that block, checked like a
user's; any other blob as a line naming it); ``get_prompt`` gives ``LLMMessage``s. A server's
error answer to any of them raises ``MCPRequestError``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import attrs
import mcp_types as types
from mcp.shared.exceptions import MCPError

from oma_core import (
    InvalidMessageError,
    LLMMessage,
    TextBlock,
    audio_base64,
    document_base64,
    image_base64,
)
from oma_core.errors import BackendError
from oma_core.messages import ContentBlock

__all__ = [
    "MCPRequestError",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "prompt",
    "prompt_messages",
    "request_error",
    "resource",
    "resource_blocks",
    "resource_template",
]


class MCPRequestError(BackendError):
    """An MCP server answered a request (``resources/read``, ``prompts/get``...) with an
    error; ``backend`` names the server, ``method`` the request, ``error_code`` the
    JSON-RPC code of its answer (e.g. -32602 for an unknown resource or prompt)."""

    code = "MCP_REQUEST_ERROR"

    def __init__(
        self, message: str, *, backend: str, method: str, error_code: int | None = None
    ) -> None:
        self.method = method
        self.error_code = error_code
        super().__init__(message, backend=backend)


def request_error(server: str, method: str, about: str, error: MCPError) -> MCPRequestError:
    """The typed error for ``error``, the server's answer to ``method`` (on ``about``)."""
    what = f"{method} {about}" if about else method
    return MCPRequestError(
        f"MCP server {server!r} refused {what}: {error.message} (code {error.code})",
        backend=server,
        method=method,
        error_code=error.code,
    )


@attrs.frozen
class Resource:
    """A resource a server offers (``resources/list``)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


@attrs.frozen
class ResourceTemplate:
    """A family of resources (``resources/templates/list``): ``uri_template`` is RFC 6570,
    e.g. ``greeting://{name}``; read one with its variables filled in."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


@attrs.frozen
class PromptArgument:
    """One argument of a ``Prompt``: its name, what it is for, whether it must be given."""

    name: str
    description: str | None = None
    required: bool = False


@attrs.frozen
class Prompt:
    """A prompt template a server offers (``prompts/list``); ``get_prompt`` fills it in."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()


def resource(item: types.Resource) -> Resource:
    return Resource(item.uri, item.name, item.title, item.description, item.mime_type, item.size)


def resource_template(item: types.ResourceTemplate) -> ResourceTemplate:
    return ResourceTemplate(
        item.uri_template, item.name, item.title, item.description, item.mime_type
    )


def prompt(item: types.Prompt) -> Prompt:
    arguments = tuple(
        PromptArgument(a.name, a.description, bool(a.required)) for a in item.arguments or ()
    )
    return Prompt(item.name, item.title, item.description, arguments)


def resource_blocks(result: types.ReadResourceResult) -> list[ContentBlock]:
    """A resource's contents as oma content blocks: text as ``TextBlock``, an image, audio or
    document blob as that block (checked like a user's), any other blob as a line naming it."""
    blocks: list[ContentBlock] = []
    for index, item in enumerate(result.contents):
        blocks.append(_contents_block(item, f"contents[{index}]"))
    return blocks


def prompt_messages(result: types.GetPromptResult) -> tuple[LLMMessage, ...]:
    """A filled-in prompt as oma messages, one per prompt message."""
    messages: list[LLMMessage] = []
    for index, item in enumerate(result.messages):
        messages.append(LLMMessage(item.role, [_prompt_block(item.content, f"messages[{index}]")]))
    return tuple(messages)


def _contents_block(item: Any, where: str) -> Any:
    mime = item.mime_type or ("text/plain" if isinstance(item, types.TextResourceContents) else "")
    if isinstance(item, types.TextResourceContents):
        return TextBlock(item.text)
    data = item.blob
    try:
        if mime.startswith("image/"):
            return image_base64(data, mime)
        if mime.startswith("audio/"):
            return audio_base64(data, mime)
        try:
            name = item.uri.rstrip("/").rsplit("/", 1)[-1] or None
            return document_base64(data, mime, name)
        except InvalidMessageError:
            size = len(base64.b64decode(data, validate=True))
            kind = mime or "no media type"
            return TextBlock(f"[resource {item.uri} ({kind}, {size} bytes): no oma block for it]")
    except InvalidMessageError as error:
        raise InvalidMessageError(where, error.reason) from None
    except (binascii.Error, ValueError):
        raise InvalidMessageError(where, "must contain raw base64 data") from None


def _prompt_block(content: Any, where: str) -> Any:
    if isinstance(content, types.TextContent):
        return TextBlock(content.text)
    if isinstance(content, types.ImageContent):
        return image_base64(content.data, content.mime_type)
    if isinstance(content, types.AudioContent):
        return audio_base64(content.data, content.mime_type)
    if isinstance(content, types.EmbeddedResource):
        return _contents_block(content.resource, f"{where}.resource")
    if isinstance(content, types.ResourceLink):
        return TextBlock(f"[resource link: {content.uri} ({content.name})]")
    return TextBlock(f"[unsupported MCP content of type {getattr(content, 'type', '?')!r}]")
