"""What the bridge sends: the OpenAI-shaped request LiteLLM is handed reaches the ``openai/``
route's wire as it is, with the portable settings; and what it refuses sends nothing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import Agent, AgentConfig, OmaError, UnsupportedContentBlockError, load_messages, tool
from oma_core.toolkit import ProviderRequest

MODEL = "openai/gpt-fake"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


def agent(server: FakeChatCompletions, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "bridge",
        "provider": "litellm",
        "model": MODEL,
        "base_url": server.base_url,
        "api_key": "test-key",
        "max_retries": 0,
    }
    values.update(config)
    return Agent(AgentConfig(**values))


def user(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": list(blocks)}]


async def test_temperature_max_tokens_and_stop_reach_the_wire(
    server: FakeChatCompletions,
) -> None:
    async with agent(server, temperature=0.3, max_tokens=77, stop=["END", "##"]) as bridge:
        result = await bridge.run("hi")
    assert result.success, result.status.error
    body = server.requests[0].json
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.3, 77, ["END", "##"])
    assert body["model"] == "gpt-fake"


@pytest.mark.parametrize(
    ("model", "variable"),
    [("openai/gpt-fake", "OPENAI_API_KEY"), ("deepinfra/fake-model", "DEEPINFRA_API_KEY")],
)
async def test_an_sdk_route_without_a_configured_key_sends_its_own_variable(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch, model: str, variable: str
) -> None:
    # the plugin builds the OpenAI SDK client for these routes: the key is still the one
    # LiteLLM would have read for the route
    monkeypatch.setenv(variable, "test-key")  # the one key the fake server accepts
    async with agent(server, model=model, api_key=None) as bridge:
        result = await bridge.run("hi")
    assert result.success, result.status.error
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


async def test_the_system_prompt_is_the_first_message(server: FakeChatCompletions) -> None:
    async with agent(server, system_prompt="be brief") as bridge:
        await bridge.run("hi")
    assert server.requests[0].json["messages"][0] == {"role": "system", "content": "be brief"}


async def test_a_base64_image_goes_as_a_data_url(server: FakeChatCompletions) -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
        "detail": "low",
    }
    async with agent(server) as bridge:
        result = await bridge.run(user({"type": "text", "text": "what?"}, image))
    assert result.success, result.status.error
    part = server.requests[0].json["messages"][0]["content"][1]
    assert part == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"},
    }


async def test_tools_are_declared_and_a_tool_call_round_trips(
    server: FakeChatCompletions,
) -> None:
    @tool
    def forecast(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    server.reply_tool_call("call_1", "forecast", {"city": "Paris"})
    server.reply_text("It is sunny.")
    async with agent(server, tools=[forecast]) as bridge:
        result = await bridge.run("weather in Paris?")
    assert result.output == "It is sunny.", result.status.error
    first, second = (r.json for r in server.requests)
    assert first["tools"][0]["function"]["name"] == "forecast"
    assert first["tools"][0]["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "sunny in Paris",
    }


async def test_streaming_gives_text_deltas_and_usage(server: FakeChatCompletions) -> None:
    server.reply_text("a streamed answer in pieces")
    async with agent(server) as bridge, bridge.stream("hi") as events:
        seen = [e async for e in events]
    texts = [e.data for e in seen if e.type == "text"]
    assert len(texts) > 1 and "".join(texts) == "a streamed answer in pieces"
    done = seen[-1].data
    assert (done.usage.input_tokens, done.usage.output_tokens) == (9, 5)
    assert server.requests[0].json["stream_options"] == {"include_usage": True}


VIDEO = {
    "type": "video",
    "source": {
        "type": "base64",
        "media_type": "video/mp4",
        "data": base64.b64encode(b"\x00\x00\x00\x18ftypmp42").decode(),
    },
}
REFUSED = {
    "video-base64": user({"type": "text", "text": "x"}, VIDEO),
    "video-url": user(
        {
            "type": "video",
            "source": {
                "type": "url",
                "media_type": "video/mp4",
                "url": "https://example.com/a.mp4",
            },
        }
    ),
    "image-bmp": user(
        {
            "type": "image",
            "source": {
                "type": "url",
                "media_type": "image/bmp",
                "url": "https://example.com/a.bmp",
            },
        }
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_what_it_cannot_carry_is_refused_and_sends_nothing(
    server: FakeChatCompletions, name: str
) -> None:
    async with agent(server) as bridge:
        result = await bridge.run(REFUSED[name])
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError), error
    assert error.provider == "LiteLLM bridge"
    assert str(error).startswith('LiteLLM bridge cannot represent the "')
    assert server.requests == []


@pytest.mark.parametrize("model", ["gpt-fake", "openai/", "/gpt"])
async def test_a_model_without_its_route_is_refused_and_sends_nothing(
    server: FakeChatCompletions, model: str
) -> None:
    async with agent(server, model=model) as bridge:
        result = await bridge.run("hi")
    assert isinstance(result.status.error, OmaError)
    assert "provider/model" in str(result.status.error)
    assert server.requests == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=40), arguments=st.dictionaries(st.text(max_size=6), _JSON, max_size=4))
def test_a_tool_call_s_arguments_and_text_survive_the_mapping(
    text: str, arguments: dict[str, Any]
) -> None:
    from oma_litellm.mapping import build_body

    conversation = [
        *user({"type": "text", "text": text}),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": arguments}],
        },
        *user({"type": "tool_result", "tool_use_id": "c1", "content": text}),
    ]
    body = build_body(ProviderRequest(model=MODEL, messages=load_messages(conversation)))
    sent = body["messages"]
    assert sent[0] == {"role": "user", "content": text}
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == arguments
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": text}
