"""The wire: ``POST {base_url}/api/chat`` as Ollama's native API documents it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from oma_core import (
    Base64Source,
    ImageBlock,
    LLMMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from oma_core.http import (
    HttpProvider,
    ToolCallAssembler,
    assistant_response,
    chat_tools,
    malformed_response,
    stream_end,
    tool_result_text,
)
from oma_core.toolkit import ProviderEvent, ProviderRequest, ProviderResponse, TextDelta

PATH = "/api/chat"
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}
SAMPLING = {"temperature": "temperature", "max_tokens": "num_predict", "stop": "stop"}


class NdjsonExampleProvider(HttpProvider):
    def render(self, request: ProviderRequest) -> dict[str, Any]:
        system = [{"role": "system", "content": request.system_prompt}]
        messages = system if request.system_prompt else []
        names: dict[str, str] = {}  # tool_use id -> tool name (a tool message names its tool)
        for message in request.messages:
            messages.extend(_messages(message, names))
        body: dict[str, Any] = {"model": request.model or self.spec.default_model}
        body |= {"messages": messages, "stream": False}
        if request.tools:
            body["tools"] = chat_tools(request.tools)
        options = dict(self.options.get("options") or {})
        for field, wire in SAMPLING.items():
            if (value := getattr(request, field)) is not None:
                options[wire] = list(value) if field == "stop" else value
        if options:
            body["options"] = options
        if "keep_alive" in self.options:
            body["keep_alive"] = self.options["keep_alive"]
        return body

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        reply = await self.post_json(PATH, self.render(request))
        message = reply.get("message") if isinstance(reply, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise malformed_response(self.display_name, "the reply has no message")
        return self._response(message["content"], message.get("tool_calls") or [], reply)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        last = None
        lines = self.stream_ndjson(PATH, {**self.render(request), "stream": True})
        async with aclosing(lines):
            async for line in lines:
                message = line.get("message") or {}
                if piece := message.get("content"):
                    text.append(piece)
                    yield TextDelta(piece)
                calls.extend(message.get("tool_calls") or ())
                if line.get("done"):
                    last = line
                    break  # the reply is whole: stop reading
        response = self._response("".join(text), calls, last) if last else None
        for event in stream_end(self.display_name, response, missing="no done line"):
            yield event

    def _response(self, text: str, calls: list[Any], reply: dict[str, Any]) -> ProviderResponse:
        assembler = ToolCallAssembler(self.display_name)
        for index, call in enumerate(calls):  # each call comes whole, with or without an id
            assembler.feed_chat(call, index=index)
        blocks = assembler.finish()
        usage = Usage(reply.get("prompt_eval_count") or 0, reply.get("eval_count") or 0)
        reason: str = reply.get("done_reason") or "stop"
        reason = "tool_use" if blocks and reason == "stop" else STOP_REASONS.get(reason, reason)
        return assistant_response(text, blocks, usage, reason, reply.get("model"))


def _messages(message: LLMMessage, names: dict[str, str]) -> list[dict[str, Any]]:
    """One oma message as Ollama messages: text joined, images a base64 list, tool calls as
    ``tool_calls``, each tool result a ``tool`` message of its own."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    images: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ImageBlock) and isinstance(block.source, Base64Source):
            images.append(block.source.data)  # base64 only, as declared
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            function = {"name": block.name, "arguments": block.plain_input()}
            calls.append({"id": block.id, "function": function})
        elif isinstance(block, ToolResultBlock):
            text = tool_result_text(block)
            content = f"Error: {text}" if block.is_error else text
            name = names.get(block.tool_use_id, "")
            out.append({"role": "tool", "content": content, "tool_name": name})
    if texts or images or calls or not out:
        wire: dict[str, Any] = {"role": message.role, "content": "\n\n".join(texts)}
        wire |= {"images": images} if images else {}
        out.append(wire | ({"tool_calls": calls} if calls else {}))
    return out
