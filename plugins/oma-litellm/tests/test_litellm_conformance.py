"""The provider conformance suite of oma_core.testing, run through LiteLLM's ``openai/`` route
against the fake Chat Completions API (``api_base`` pointed at it)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions, Reply

from oma_core import image_url
from oma_core.testing import FakeServer, NeutralRequest, RecordedRequest, ScriptedReply
from oma_core.testing.chat_completions import chat_media_part, chat_wire_items
from oma_core.testing.conformance import ProviderConformance, Sample


def expected_on_wire(sample: Sample) -> Any:
    """The Chat Completions form of the sample's block, as OpenAI's reference gives it."""
    block = sample.block
    if sample.block_type == "text":
        return {"role": sample.where, "content": block["text"]}
    if sample.block_type in ("image", "document", "audio"):
        return chat_media_part(block)
    if sample.block_type == "tool_use":
        function = {"name": block["name"], "arguments": json.dumps(block["input"])}
        return {"id": block["id"], "type": "function", "function": function}
    if sample.block_type == "tool_result":
        return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]}
    if sample.block_type == "reasoning":  # thinking goes back on the routes to Claude only
        return {"role": "assistant", "content": "done"}
    raise AssertionError(f"no expectation for {sample.id}")


def _read_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content)


def _read_part(part: Mapping[str, Any]) -> Any:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    if part["type"] == "image_url":
        url = part["image_url"]["url"]
        if url.startswith("data:"):
            media_type, _, data = url[5:].partition(";base64,")
            source = {"type": "base64", "media_type": media_type, "data": data}
            return {"type": "image", "source": source}
        return image_url(url)
    raise AssertionError(f"the reader does not know {part['type']!r} parts")


def read_chat_body(body: Mapping[str, Any]) -> NeutralRequest:
    """What a Chat Completions service understands from ``body`` (OpenAI's API reference):
    a ``tool`` message answers a call (the user's side of the turn), its text only; the
    output schema is ``response_format``'s, of type ``json_schema``."""
    response_format = body.get("response_format") or {}
    system, messages = None, []
    for message in body["messages"]:
        role, content = message["role"], message.get("content")
        if role in ("system", "developer"):
            system = _read_text(content)
            continue
        if role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": _read_text(content),
            }
            messages.append({"role": "user", "content": [result]})
            continue
        blocks = []
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}] if content else []
        elif content:
            blocks = [_read_part(p) for p in content]
        for call in message.get("tool_calls") or ():
            function = call["function"]
            arguments = json.loads(function["arguments"])
            blocks.append(
                {"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments}
            )
        messages.append({"role": role, "content": blocks or [{"type": "text", "text": ""}]})
    choice = body.get("tool_choice")
    return NeutralRequest(
        messages=messages,
        system_prompt=system,
        tools=[
            {
                "name": t["function"]["name"],
                "description": t["function"].get("description", ""),
                "input_schema": t["function"].get("parameters", {}),
            }
            for t in body.get("tools") or ()
        ],
        tool_choice=choice["function"]["name"] if isinstance(choice, dict) else choice,
        temperature=body.get("temperature"),
        max_tokens=body.get("max_completion_tokens", body.get("max_tokens")),
        stop=body.get("stop"),
        output_schema=response_format["json_schema"].get("schema")
        if response_format.get("type") == "json_schema"
        else None,
    )


_FINISH = {"end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


class TestLiteLLMConformanceOpenAIRoute(ProviderConformance):
    provider_name = "litellm"
    model = "openai/gpt-fake"
    api_key = "test-key"
    transient_stream_error = "server_error"
    output_modes = frozenset({"native", "tool", "prompted"})
    tool_error_flag = False  # a tool message has no error flag: "Error: ..." says it
    streams_tool_arguments = True  # tool_calls[].function.arguments fragments

    @pytest.fixture(autouse=True)
    def _model_map(self) -> Iterator[None]:
        """The fake model in LiteLLM's model map, taking what the real one takes (the plugin
        refuses a PDF or audio block for a model the map does not say takes it)."""
        import litellm

        entries = {"openai/gpt-fake": {"supports_pdf_input": True, "supports_audio_input": True}}
        litellm.register_model(entries)
        yield
        for name in entries:
            litellm.model_cost.pop(name, None)

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeChatCompletions:
        return fake_server_factory(FakeChatCompletions)  # type: ignore[no-any-return]

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeChatCompletions)
        return server.base_url

    def script_text(self, server: FakeChatCompletions, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeChatCompletions, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_call(call_id, name, arguments)

    def script_reply(self, server: FakeChatCompletions, reply: ScriptedReply) -> None:
        calls = tuple((c.id, c.name, dict(c.arguments)) for c in reply.tool_calls)
        server.reply(
            Reply(
                text=reply.text or None,
                tool_calls=calls,  # type: ignore[arg-type]  # the service gives every call an id
                finish_reason=_FINISH[reply.stop_reason],
                prompt_tokens=reply.usage.input_tokens,
                completion_tokens=reply.usage.output_tokens,
            )
        )

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        return read_chat_body(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.json["model"] == "gpt-fake"
        assert expected_on_wire(sample) in chat_wire_items(request.json), (sample.id, request.json)
