"""Builders for requests and message dicts, shared by the test modules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fake_openai import API_KEY, FakeChatCompletions
from oma_openai import make_provider, preset
from oma_openai.provider import OpenAIChatProvider

from oma_core import load_messages
from oma_core.toolkit import ProviderRequest, ProviderSettings, ToolDefinition

#: 1x1 transparent PNG.
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
MP4_B64 = "AAAAIGZ0eXBpc29tAAACAGlzb21pc28yYXZjMW1wNDE="
PDF_B64 = "JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDwvVHlwZS9DYXRhbG9nPj4KZW5kb2JqCg=="


def provider_for(
    srv: FakeChatCompletions, name: str = "openai", **options: Any
) -> OpenAIChatProvider:
    settings = ProviderSettings(base_url=srv.base_url, api_key=API_KEY, options=options)
    return make_provider(preset(name), settings)


def request(
    messages: Sequence[Any] | str,
    *,
    model: str | None = "gpt-test",
    system_prompt: str | None = None,
    tools: Sequence[ToolDefinition] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
    options: dict[str, Any] | None = None,
) -> ProviderRequest:
    """A provider request from plain dicts (a str is one user text turn)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": [{"type": "text", "text": messages}]}]
    return ProviderRequest(
        model=model,
        messages=load_messages(messages),
        system_prompt=system_prompt,
        tools=tuple(tools),
        max_tokens=max_tokens,
        temperature=temperature,
        options=options or {},
    )


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image_b64(data: str = PNG_B64, media_type: str = "image/png", **extra: Any) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def image_link(url: str, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "media_type": media_type, "url": url}}


def tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def tool_result(call_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block
