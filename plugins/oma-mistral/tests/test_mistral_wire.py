"""What reaches Mistral's chat completions: the URL, the key, messages, images, tools."""

from __future__ import annotations

import base64
import subprocess
import sys
from typing import Any

import pytest
from fake_mistral import API_KEY, FakeMistral, Reply, tool_reply
from hypothesis import given
from hypothesis import strategies as st
from oma_mistral import MistralProvider, wire_id

from oma_core import Agent, AgentConfig, UnsupportedContentBlockError, load_messages
from oma_core.errors import MissingKeyError
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.toolkit import ProviderRequest, ProviderSettings, ToolDefinition

PNG = base64.b64encode(MEDIA_SAMPLES["image/png"]).decode()


def _user(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, *blocks]}]


def _request(conversation: Any = None, **fields: Any) -> ProviderRequest:
    conversation = conversation or [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    return ProviderRequest(model="mistral-test", messages=load_messages(conversation), **fields)


async def _run(server: FakeMistral, conversation: Any, **config: Any) -> Any:
    config.setdefault("api_key", API_KEY)
    async with Agent(
        AgentConfig(name="a", provider="mistral", base_url=server.base_url, **config)
    ) as agent:
        return await agent.run(conversation)


def _render(request: ProviderRequest, **options: Any) -> dict[str, Any]:
    return MistralProvider(ProviderSettings(options=options)).render(request)


class TestTheRequest:
    async def test_goes_to_chat_completions_with_a_bearer_key(self, server: FakeMistral) -> None:
        assert (await _run(server, "hi")).success
        request = server.requests[0]
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == f"Bearer {API_KEY}"

    async def test_the_key_comes_from_mistral_api_key(
        self, server: FakeMistral, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("MISTRAL_API_KEY", API_KEY)
        assert (await _run(server, "hi", api_key=None)).success

    async def test_without_a_key_nothing_is_sent(
        self, server: FakeMistral, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
        with pytest.raises(MissingKeyError) as caught:
            await _run(server, "hi", api_key=None)
        assert caught.value.variables == ("MISTRAL_API_KEY",)
        assert "MISTRAL_API_KEY" in str(caught.value)
        assert server.requests == []

    def test_system_prompt_and_generation_settings(self) -> None:
        body = _render(
            _request(system_prompt="be brief", temperature=0.3, max_tokens=7, stop=("END",))
        )
        assert body == {
            "model": "mistral-test",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
            ],
            "temperature": 0.3,
            "max_tokens": 7,
            "stop": ["END"],
        }

    def test_provider_options_reach_the_body(self) -> None:
        body = _render(_request(), safe_prompt=True, random_seed=3)
        assert (body["safe_prompt"], body["random_seed"]) == (True, 3)

    def test_tools_are_functions(self) -> None:
        tool = ToolDefinition("lookup", "find", {"type": "object"})
        assert _render(_request(tools=(tool,)))["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "find",
                    "parameters": {"type": "object"},
                },
            }
        ]


class TestImages:
    @pytest.mark.parametrize("kind", ["url", "base64"])
    async def test_an_image_is_a_plain_string_image_url(
        self, server: FakeMistral, kind: str
    ) -> None:
        source = (
            {"type": "url", "media_type": "image/png", "url": "https://example.com/cat.png"}
            if kind == "url"
            else {"type": "base64", "media_type": "image/png", "data": PNG}
        )
        assert (await _run(server, _user({"type": "image", "source": source}))).success
        url = source.get("url") or f"data:image/png;base64,{PNG}"
        assert server.requests[0].json["messages"][0]["content"] == [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": url},
        ]

    async def test_video_is_refused_before_any_request(self, server: FakeMistral) -> None:
        video = {
            "type": "video",
            "source": {
                "type": "url",
                "media_type": "video/mp4",
                "url": "https://example.com/a.mp4",
            },
        }
        error = (await _run(server, _user(video))).status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert str(error).startswith('Mistral cannot represent the "video" content block')
        assert server.requests == []


class TestToolCallIds:
    def test_a_valid_id_is_sent_as_it_is(self) -> None:
        assert wire_id("D681PevKs") == "D681PevKs"

    @given(st.text(min_size=1, max_size=40))
    def test_any_id_becomes_nine_letters_and_digits_stably(self, call_id: str) -> None:
        sent = wire_id(call_id)
        assert len(sent) == 9 and sent.isascii() and sent.isalnum()
        assert wire_id(call_id) == sent

    async def test_a_call_and_its_result_carry_the_same_id_and_the_function_name(
        self, server: FakeMistral
    ) -> None:
        server.reply(tool_reply("call_conf_1", "lookup", {"q": "x"}), Reply(text="done"))

        def lookup(q: str) -> str:
            """Look a thing up."""
            return f"found {q}"

        result = await _run(server, "look it up", tools=[lookup])
        assert result.success, result.status.error
        messages = server.requests[1].json["messages"]
        call = messages[1]["tool_calls"][0]
        assert call["id"] == wire_id("call_conf_1") and len(call["id"]) == 9
        assert messages[2] == {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": "lookup",
            "content": "found x",
        }

    def test_an_error_result_says_so(self) -> None:
        conversation = [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c", "content": "boom", "is_error": True}
                ],
            },
        ]
        assert _render(_request(conversation))["messages"][2]["content"] == "Error: boom"


def test_importing_the_plugin_imports_no_http_library() -> None:
    code = "import sys, oma_mistral; print(sorted(m for m in sys.modules "
    code += "if m.split('.')[0] in ('httpx', 'httpx_sse', 'httpcore')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
