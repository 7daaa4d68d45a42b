"""The core's provider conformance suite against the fake Mistral service."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from fake_mistral import FakeMistral, Reply, tool_reply
from oma_mistral import wire_id

from oma_core import image_url
from oma_core.testing import FakeServer, NeutralRequest, RecordedRequest, ScriptedReply
from oma_core.testing.chat_completions import chat_wire_items
from oma_core.testing.conformance import ProviderConformance, Sample


def expected_on_wire(sample: Sample) -> Any:
    """The Mistral form of the sample's block, as found by ``chat_wire_items``."""
    block = dict(sample.block)
    if sample.block_type == "text":
        return {"role": sample.where, "content": block["text"]}
    if sample.block_type == "image":
        source = block["source"]
        url = (
            f"data:{source['media_type']};base64,{source['data']}"
            if source["type"] == "base64"
            else source["url"]
        )
        return {"type": "image_url", "image_url": url}
    if sample.block_type == "document":  # a PDF by URL; the filename names it where given
        chunk = {"type": "document_url", "document_url": block["source"]["url"]}
        if block.get("filename"):
            chunk["document_name"] = block["filename"]
        return chunk
    if sample.block_type == "audio":  # the base64 itself, whatever the format
        return {"type": "input_audio", "input_audio": block["source"]["data"]}
    if sample.block_type == "tool_use":
        function = {"name": block["name"], "arguments": json.dumps(block["input"])}
        return {"id": wire_id(block["id"]), "type": "function", "function": function}
    if sample.block_type == "tool_result":
        return {
            "role": "tool",
            "tool_call_id": wire_id(block["tool_use_id"]),
            "name": "lookup",
            "content": block["content"],
        }
    if sample.block_type == "reasoning":  # a thinking chunk (Mistral signs nothing)
        return {"type": "thinking", "thinking": [{"type": "text", "text": block["text"]}]}
    raise AssertionError(f"no expectation for {sample.id}")


def _read_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content)


def _read_part(part: dict[str, Any]) -> Any:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    if part["type"] == "image_url":
        url = part["image_url"]
        url = url["url"] if isinstance(url, dict) else url
        if url.startswith("data:"):
            media_type, _, data = url[5:].partition(";base64,")
            source = {"type": "base64", "media_type": media_type, "data": data}
            return {"type": "image", "source": source}
        return image_url(url)
    raise AssertionError(f"the reader does not know {part['type']!r} parts")


def read_mistral_body(body: dict[str, Any]) -> NeutralRequest:
    """What Mistral's chat completions endpoint understands from ``body`` (its API
    reference): a ``tool`` message answers a call (the user's side), its text only; the
    output schema is ``response_format``'s, of type ``json_schema``."""
    response_format = body.get("response_format") or {}
    system, messages = None, []
    for message in body["messages"]:
        role, content = message["role"], message.get("content")
        if role == "system":
            system = _read_text(content)
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": message["tool_call_id"],
                      "content": _read_text(content)}  # fmt: skip
            messages.append({"role": "user", "content": [result]})
        else:
            blocks = []
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}] if content else []
            elif content:
                blocks = [_read_part(p) for p in content]
            for call in message.get("tool_calls") or ():
                function = call["function"]
                arguments = function["arguments"]
                if isinstance(arguments, str):
                    arguments = json.loads(arguments)
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": function["name"],
                        "input": arguments,
                    }
                )
            messages.append({"role": role, "content": blocks or [{"type": "text", "text": ""}]})
    choice = body.get("tool_choice")
    if choice == "any":
        choice = "required"
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
        max_tokens=body.get("max_tokens"),
        stop=body.get("stop"),
        output_schema=response_format["json_schema"].get("schema")
        if response_format.get("type") == "json_schema"
        else None,
    )


_FINISH = {"end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


class TestMistralConformance(ProviderConformance):
    provider_name = "mistral"
    output_modes = frozenset({"native", "tool", "prompted"})
    transient_stream_error = "service_unavailable"
    tool_error_flag = False  # a tool message has no error flag: "Error: ..." says it
    streams_tool_arguments = True  # tool_calls[].function.arguments fragments
    tool_choices: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "auto": {"tool_choice": "auto"},
        "none": {"tool_choice": "none"},
        "required": {"tool_choice": "any"},
        "lookup": {"tool_choice": {"type": "function", "function": {"name": "lookup"}}},
    }

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeMistral)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    def script_tool_call(self, server: Any, call_id: str, name: str, arguments: Any) -> None:
        server.reply(tool_reply(call_id, name, arguments))

    def script_reply(self, server: Any, reply: ScriptedReply) -> None:
        calls = tuple((c.id, c.name, json.dumps(dict(c.arguments))) for c in reply.tool_calls)
        server.reply(
            Reply(
                text=reply.text,
                tool_calls=calls,  # type: ignore[arg-type]  # the service gives every call an id
                finish_reason=_FINISH[reply.stop_reason],
                prompt_tokens=reply.usage.input_tokens,
                completion_tokens=reply.usage.output_tokens,
            )
        )

    def read_request(self, body: dict[str, Any]) -> NeutralRequest:  # type: ignore[override]
        return read_mistral_body(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert expected_on_wire(sample) in chat_wire_items(request.json), sample.id
