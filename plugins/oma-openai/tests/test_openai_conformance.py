"""The core's provider conformance suite, run for three presets against the fake service.

Two adaptations to the base suite (``oma_core.testing.conformance``), made here by overriding:

- the base points ``base_url`` at the server root; Chat Completions' ``base_url`` includes
  ``/v1`` (the SDK's meaning), so ``settings`` and ``agent`` use ``server.base_url``;
- the base expects every declared block to succeed. OpenAI *forwards* video for the service to
  judge, and the strict (OpenAI-like) server refuses it; for ``openai`` the two wire tests check
  that forwarded blocks do reach the wire and come back as a 400 ``ProviderError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import FakeChatCompletions, Reply

from oma_core import Mode, ProviderError, ProviderSettings
from oma_core.agent import Agent
from oma_core.testing.conformance import ProviderConformance, Sample, declared, samples
from oma_core.testing.fake_server import FakeServer, RecordedRequest


def _url(source: dict[str, Any]) -> str:
    if source["type"] == "base64":
        return f"data:{source['media_type']};base64,{source['data']}"
    return str(source["url"])


def _wire_items(body: dict[str, Any]) -> list[Any]:
    """Every message, content part and tool call of a request body, flattened."""
    items: list[Any] = []
    for message in body["messages"]:
        items.append(message)
        if isinstance(message.get("content"), list):
            items.extend(message["content"])
        items.extend(message.get("tool_calls") or ())
    return items


def expected_on_wire(sample: Sample) -> Any:
    """The Chat Completions form of the sample's block, as it must appear in ``_wire_items``."""
    block = dict(sample.block)
    kind = sample.block_type
    if kind == "text":
        return {"role": sample.where, "content": block["text"]}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": _url(block["source"])}}
    if kind == "video":
        return {"type": "video_url", "video_url": {"url": _url(block["source"])}}
    if kind == "file":
        file = {"filename": block["filename"], "file_data": _url(block["source"])}
        return {"type": "file", "file": file}
    if kind == "tool_use":
        arguments = json.dumps(block["input"], ensure_ascii=False)
        function = {"name": block["name"], "arguments": arguments}
        return {"id": block["id"], "type": "function", "function": function}
    if kind == "tool_result":
        return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]}
    if kind == "reasoning":
        return {"role": "assistant", "content": "done", "reasoning_content": block["text"]}
    raise AssertionError(f"no expectation for {sample.id}")


class _ChatCompletionsConformance(ProviderConformance):
    mode = "strict"

    @pytest.fixture
    def server(self) -> Iterator[FakeChatCompletions]:
        with FakeChatCompletions(mode=self.mode) as srv:  # type: ignore[arg-type]
            yield srv  # type: ignore[misc]
            assert srv.handler_errors == []  # type: ignore[attr-defined]

    def settings(self, server: FakeServer, **options: Any) -> ProviderSettings:
        assert isinstance(server, FakeChatCompletions)
        return ProviderSettings(base_url=server.base_url, api_key=self.api_key, options=options)

    def agent(self, server: FakeServer, **config: Any) -> Agent:
        assert isinstance(server, FakeChatCompletions)
        return super().agent(server, **{"base_url": server.base_url, **config})

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    def script_tool_call(self, server: Any, call_id: str, name: str, arguments: Any) -> None:
        server.reply(Reply(text=None, tool_calls=((call_id, name, json.dumps(arguments)),)))

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        expected = expected_on_wire(sample)
        assert expected in _wire_items(request.json), sample.id
        if sample.where == "tool_result":
            note = {"type": "text", "text": "Media returned by tool call call_conf_1:"}
            assert note in _wire_items(request.json), sample.id


class TestOpenAIConformance(_ChatCompletionsConformance):
    """OpenAI against the strict server: forwarded video reaches the wire and is refused."""

    provider_name = "openai"
    model = "gpt-test"

    def _forwarded(self, sample: Sample) -> bool:
        mode = self.spec().capabilities.mode(sample.block_type, sample.where, sample.source)
        return mode is Mode.FORWARDED

    async def test_declared_blocks_reach_the_wire(self, server: FakeServer) -> None:
        capabilities = self.spec().capabilities
        forwarded = accepted = 0
        for sample in samples():
            if not declared(capabilities, sample):
                continue
            server.reset()
            result = await self.run(server, sample.conversation)
            assert len(server.requests) == 1, sample.id
            self.assert_on_wire(sample, server.requests[0])
            if self._forwarded(sample):
                error = result.status.error
                assert isinstance(error, ProviderError), sample.id
                assert (error.status_code, error.retryable) == (400, False), sample.id
                forwarded += 1
            else:
                assert result.success, f"{sample.id}: {result.status.error!r}"
                accepted += 1
        assert forwarded and accepted

    async def test_render_is_what_reaches_the_wire(self, server: FakeServer) -> None:
        capabilities = self.spec().capabilities
        for sample in samples():
            if not declared(capabilities, sample):
                continue
            server.reset()
            async with self.agent(server, system_prompt="be brief") as agent:
                rendered = agent.provider().render(agent.build_request(list(sample.conversation)))
                await agent.run(list(sample.conversation))
            assert server.requests[0].json == rendered, sample.id


class TestMiniMaxConformance(_ChatCompletionsConformance):
    """MiniMax against the compatible server, which accepts forwarded video and files."""

    provider_name = "minimax"
    mode = "compatible"


class TestDeepSeekConformance(_ChatCompletionsConformance):
    """DeepSeek: text and tools only, reasoning forwarded as reasoning_content."""

    provider_name = "deepseek"
    mode = "compatible"
