"""The core's provider conformance suite on OpenAI's Responses API (``api="responses"``),
once per transport, against the fake service's ``POST /v1/responses``.

The wire reader below is written from OpenAI's API reference for ``POST /v1/responses`` (read
on 2026-12-06), not from the plugin: ``instructions`` is the system prompt; ``input`` holds
``message`` items (``input_text`` / ``input_image`` parts), ``function_call`` items and
``function_call_output`` items; ``text.format`` ``json_schema`` is the output schema.

What ``openai`` declares but the Responses API cannot carry is refused locally (the kit checks
the refusal): video (no video input), and reasoning the API did not issue (the kit's sample has
no provider; a reasoning item needs the id and encrypted content the service gave it).
The Responses API has no ``stop``: a request with stop sequences is refused locally, so the
kit's mapping requests are sent without it (``stop_sequences = False``). Reasoning items
(``script_reasoning``) come back with their id and ``encrypted_content`` unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pytest
from fake_openai import Reply
from fake_responses import FakeResponses
from oma_openai.provider import TRANSPORTS
from test_openai_conformance import _FINISH, _read_source

from oma_core import AgentConfig, ReasoningBlock
from oma_core.testing import NeutralRequest, ScriptedReply
from oma_core.testing.cache_checks import CacheMarker
from oma_core.testing.chat_completions import data_url
from oma_core.testing.conformance import ProviderConformance, Sample
from oma_core.testing.fake_server import FakeServer, RecordedRequest
from oma_core.toolkit import ProviderSettings


def _read_part(part: Mapping[str, Any]) -> Any:
    kind = part["type"]
    if kind == "input_text":
        return {"type": "text", "text": part["text"]}
    if kind == "input_image":
        return _read_source(part["image_url"], "image")
    raise AssertionError(f"the reader does not know {kind!r} parts")


def _read_output(output: Any) -> Any:
    if isinstance(output, str):
        return output
    return [_read_part(p) for p in output]


def read_responses_body(body: Mapping[str, Any]) -> NeutralRequest:
    """What the Responses API understands from ``body``."""
    messages: list[dict[str, Any]] = []

    def add(role: str, block: Any) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})

    system = None
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {"type": "tool_use", "id": item["call_id"], "name": item["name"],
                    "input": json.loads(item["arguments"])}  # fmt: skip
            add("assistant", call)
        elif kind == "function_call_output":
            result = {"type": "tool_result", "tool_use_id": item["call_id"],
                      "content": _read_output(item["output"])}  # fmt: skip
            add("user", result)
        elif kind == "message" and item["role"] in ("system", "developer"):
            content = item["content"]  # the system prompt as an input item
            system = content if isinstance(content, str) else "".join(p["text"] for p in content)
        elif kind == "message":
            content = item["content"]
            if isinstance(content, str):
                add(item["role"], {"type": "text", "text": content})
                continue
            for part in content:
                if part["type"] == "output_text":
                    add(item["role"], {"type": "text", "text": part["text"]})
                else:
                    add(item["role"], _read_part(part))
    choice = body.get("tool_choice")
    spec = (body.get("text") or {}).get("format") or {}
    return NeutralRequest(
        messages=messages,
        system_prompt=body.get("instructions", system),
        tools=[
            {
                "name": t["name"],
                "description": t.get("description", ""),
                "input_schema": t.get("parameters", {}),
            }
            for t in body.get("tools") or ()
        ],
        tool_choice=choice["name"] if isinstance(choice, dict) else choice,
        temperature=body.get("temperature"),
        max_tokens=body.get("max_output_tokens"),
        output_schema=spec.get("schema") if spec.get("type") == "json_schema" else None,
    )


def read_responses_cache_markers(body: Mapping[str, Any]) -> list[CacheMarker]:
    """Where OpenAI sees explicit cache breakpoints in a Responses ``body`` (the prompt caching
    guide): ``prompt_cache_breakpoint`` on a content part of a system or developer message
    (the system prompt), of a user message, or of a tool output."""
    markers = []
    for item in body["input"]:
        role = item.get("role")
        place = "system" if role in ("system", "developer") else "messages"
        parts = item.get("output") if item.get("type") == "function_call_output" else None
        parts = parts if parts is not None else item.get("content")
        for part in parts if isinstance(parts, list) else ():
            if "prompt_cache_breakpoint" in part:
                markers.append(CacheMarker(place, part.get("text")))  # type: ignore[arg-type]
    return markers


def responses_wire_items(body: Mapping[str, Any]) -> list[Any]:
    """Every input item and content part (or tool output part) of a body, flattened."""
    items: list[Any] = []
    for item in body["input"]:
        items.append(item)
        for key in ("content", "output"):
            if isinstance(item.get(key), list):
                items.extend(item[key])
    return items


def expected_on_wire(sample: Sample) -> Any:
    """The Responses form of the sample's block (from the API reference)."""
    block = dict(sample.block)
    kind, source = sample.block_type, block.get("source")
    if kind == "text":
        if sample.where == "assistant":
            return {"role": "assistant", "content": block["text"]}
        return {"type": "input_text", "text": block["text"]}
    if kind == "image":
        return {"type": "input_image", "image_url": data_url(source), "detail": "auto"}
    if kind == "audio":
        formats = {"audio/wav": "wav", "audio/mpeg": "mp3"}
        data = {"data": source["data"], "format": formats[source["media_type"]]}
        return {"type": "input_audio", "input_audio": data}
    if kind in ("document", "file"):
        if source["type"] == "url":
            return {"type": "input_file", "file_url": source["url"]}
        if source["media_type"].startswith("text/"):
            return None  # framed text, as on Chat Completions: checked by its marker
        filename = block.get("filename") or "document.pdf"
        return {"type": "input_file", "filename": filename, "file_data": data_url(source)}
    if kind == "tool_use":
        return {"type": "function_call", "call_id": block["id"], "name": block["name"],
                "arguments": json.dumps(block["input"], ensure_ascii=False)}  # fmt: skip
    if kind == "tool_result":
        return {"type": "function_call_output", "call_id": block["tool_use_id"],
                "output": block["content"]}  # fmt: skip
    raise AssertionError(f"no expectation for {sample.id}")


class TestOpenAIResponsesConformance(ProviderConformance):
    provider_name = "openai"
    model = "gpt-test"
    transport = "httpx"
    output_modes = frozenset({"native", "tool", "prompted"})
    tool_error_flag = False  # function_call_output has no error flag: "Error: ..." says it
    streams_tool_arguments = True  # response.function_call_arguments.delta
    final_event_errors = True  # response.failed
    stop_sequences = False  # the Responses API has none (a request with stop is refused)
    cache_markers = True  # prompt_cache_breakpoint (a model oma does not know gets them)
    cache_usage = frozenset({"read", "write"})  # input_tokens_details
    tool_choices: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "auto": {"tool_choice": "auto"},
        "none": {"tool_choice": "none"},
        "required": {"tool_choice": "required"},
        "lookup": {"tool_choice": {"type": "function", "name": "lookup"}},
    }

    @pytest.fixture(autouse=True, params=TRANSPORTS)
    def _each_transport(self, request: pytest.FixtureRequest) -> None:
        self.transport = request.param

    def settings(self, server: FakeServer, **options: Any) -> ProviderSettings:
        return super().settings(
            server, **{"transport": self.transport, "api": "responses", **options}
        )

    def config(self, server: FakeServer, **config: Any) -> AgentConfig:
        options = {"transport": self.transport, "api": "responses",
                   **dict(config.pop("provider_options", None) or {})}  # fmt: skip
        return super().config(server, provider_options=options, **config)

    @pytest.fixture
    def server(self) -> Iterator[FakeResponses]:
        with FakeResponses(mode="strict") as srv:
            yield srv  # type: ignore[misc]
            assert srv.handler_errors == []

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeResponses)
        return server.base_url

    def _output_config(self, mode: str, with_tools: bool = False) -> dict[str, Any]:
        config = super()._output_config(mode, with_tools)
        config.pop("stop", None)  # the Responses API takes none (refused locally)
        return config

    def refused_for_the_model(self, sample: Sample) -> bool:
        return sample.block_type in ("video", "reasoning")

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    def script_tool_call(self, server: Any, call_id: str, name: str, arguments: Any) -> None:
        server.reply(Reply(text=None, tool_calls=((call_id, name, json.dumps(arguments)),)))

    def script_reply(self, server: Any, reply: ScriptedReply) -> None:
        calls = tuple((c.id, c.name, json.dumps(dict(c.arguments))) for c in reply.tool_calls)
        server.reply(
            Reply(
                text=reply.text or None,
                tool_calls=calls,  # type: ignore[arg-type]  # the service gives every call an id
                finish_reason=_FINISH[reply.stop_reason],
                prompt_tokens=reply.usage.input_tokens,
                completion_tokens=reply.usage.output_tokens,
                cached_tokens=reply.usage.cache_read_tokens or None,
                cache_write_tokens=reply.usage.cache_write_tokens or None,
            )
        )

    def read_cache_markers(self, body: Mapping[str, Any]) -> list[CacheMarker]:
        return read_responses_cache_markers(body)

    def script_reasoning(
        self,
        server: Any,
        reasoning: str,
        *,
        text: str = "",
        call: tuple[str, str, Mapping[str, Any]] | None = None,
    ) -> None:
        calls = () if call is None else ((call[0], call[1], json.dumps(dict(call[2]))),)
        server.reply(Reply(text=text or None, tool_calls=calls, reasoning=reasoning))

    def reasoning_on_wire(self, block: ReasoningBlock) -> tuple[str, ...]:
        """The reasoning item's id and ``encrypted_content`` (the signature wraps the item)."""
        assert block.signature is not None
        item = json.loads(block.signature)["openai_reasoning_item"]
        return (item["id"], item["encrypted_content"])

    def read_request(self, body: dict[str, Any]) -> NeutralRequest:  # type: ignore[override]
        return read_responses_body(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        expected = expected_on_wire(sample)
        items = responses_wire_items(request.json)
        if expected is None:  # a text document: its framed text, by its first line
            texts = [i.get("text", "") for i in items if isinstance(i, dict)]
            assert any(t.startswith("-----BEGIN FILE") for t in texts), sample.id
            return
        assert expected in items, (sample.id, expected, items)
