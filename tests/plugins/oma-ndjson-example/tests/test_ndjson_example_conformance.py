"""The conformance kit, run on the Ollama-like example plugin against its fake service."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from fake_ndjson_example import FakeNdjsonExample

from oma_core.media import sniff_media_type
from oma_core.testing import NeutralRequest, RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample, ScriptedReply

# The fixture, imported: the core's tests collect this folder, and a conftest below the root
# may not load a plugin (a plugin of its own, generated from the template, has a conftest).
from oma_core.testing.pytest_plugin import fake_server_factory  # noqa: F401


class TestNdjsonExampleConformance(ProviderConformance):
    provider_name = "ndjson-example"
    # The service's stream errors are {"error": "text"}, with no type: error_event ignores
    # the type the kit passes, and the provider treats every such line as transient.
    transient_stream_error = "error"
    tool_error_flag = False  # an error result is a tool message starting "Error: "
    media_apart_from_text = True  # a message's images are a list beside its text
    tool_call_ids = "never"  # Ollama's tool calls carry no id: the provider makes unique ones

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeNdjsonExample:  # noqa: F811
        return fake_server_factory(FakeNdjsonExample)  # type: ignore[no-any-return]

    def script_text(self, server: FakeNdjsonExample, text: str) -> None:
        server.reply(text)

    def script_tool_call(
        self, server: FakeNdjsonExample, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply(
            "", [{"id": call_id, "function": {"name": name, "arguments": dict(arguments)}}]
        )

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        """What Ollama's ``/api/chat`` reads (its API documentation): ``images`` are base64
        files it recognises by their bytes; a ``tool`` message answers the earliest
        unanswered call of its ``tool_name``; sampling settings are in ``options``."""
        system, messages, open_calls = None, [], []
        for message in body["messages"]:
            role, text = message["role"], message["content"]
            if role == "system":
                system = text
                continue
            if role == "tool":
                call = next(c for c in open_calls if c["name"] == message["tool_name"])
                open_calls.remove(call)
                result = {"type": "tool_result", "tool_use_id": call["id"], "content": text}
                messages.append({"role": "user", "content": [result]})
                continue
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            for data in message.get("images") or ():
                kind = sniff_media_type(base64.b64decode(data))
                source = {"type": "base64", "media_type": kind, "data": data}
                blocks.append({"type": "image", "source": source})
            for call in message.get("tool_calls") or ():
                function = call["function"]
                use = {"type": "tool_use", "id": call["id"], "name": function["name"],
                       "input": function["arguments"]}  # fmt: skip
                blocks.append(use)
                open_calls.append(use)
            messages.append({"role": role, "content": blocks or [{"type": "text", "text": ""}]})
        options = body.get("options") or {}
        functions = [tool["function"] for tool in body.get("tools") or ()]
        tools = [{"name": f["name"], "description": f["description"],
                  "input_schema": f["parameters"]} for f in functions]  # fmt: skip
        return NeutralRequest(
            messages=messages, system_prompt=system, tools=tools,
            temperature=options.get("temperature"), max_tokens=options.get("num_predict"),
            stop=options.get("stop"),
        )  # fmt: skip

    def script_reply(self, server: FakeNdjsonExample, reply: ScriptedReply) -> None:
        calls = [  # Ollama gives calls no ids: with tool_call_ids "never", the kit gives none
            {"function": {"name": c.name, "arguments": dict(c.arguments)}}
            | ({"id": c.id} if c.id else {})
            for c in reply.tool_calls
        ]
        usage = {"prompt_eval_count": reply.usage.input_tokens}
        usage["eval_count"] = reply.usage.output_tokens
        reason = "length" if reply.stop_reason == "max_tokens" else "stop"
        server.reply(reply.text, calls, done_reason=reason, usage=usage)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, _, _ = sample.locator  # one wire message per message of these samples
        sent = request.json["messages"][message]
        block = sample.block
        if sample.block_type == "text":
            assert sent["content"] == block["text"], sample.id
        elif sample.block_type == "image":
            assert sent["images"] == [block["source"]["data"]], sample.id
        elif sample.block_type == "tool_use":
            call = {"name": block["name"], "arguments": block["input"]}
            assert sent["tool_calls"] == [{"id": block["id"], "function": call}], sample.id
        else:  # tool_result
            assert sent == {"role": "tool", "content": block["content"], "tool_name": "lookup"}
