"""The built-in echo provider: an offline description of exactly what it received."""

from __future__ import annotations

import base64
import math

import pytest
from _builders import assistant_turn, tool_call_turn, user_turn

from oma_core import (
    Agent,
    AgentConfig,
    Base64Source,
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    VideoBlock,
    dump_messages,
    estimate_tokens,
)
from oma_core.capabilities import Capabilities
from oma_core.default_plugins.echo import EchoProvider, describe_message
from oma_core.messages import FilePart
from oma_core.plugins import PluginHost
from oma_core.toolkit import (
    Provider,
    ProviderRequest,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    ToolDefinition,
)

PNG_1234 = base64.b64encode(bytes(1234)).decode()


def user(*blocks: object) -> LLMMessage:
    return LLMMessage(role="user", content=tuple(blocks))  # type: ignore[arg-type]


def request(*messages: LLMMessage, **kwargs: object) -> ProviderRequest:
    return ProviderRequest(model=None, messages=messages, **kwargs)  # type: ignore[arg-type]


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode("ascii")


PNG_BYTES = len(base64.b64decode(PNG))


def test_text_and_base64_image_are_described_on_one_line() -> None:
    message = user(TextBlock("What is shown?"), ImageBlock(Base64Source("image/png", PNG_1234)))
    assert describe_message(message) == (
        'user: text "What is shown?"; image image/png base64 1234 bytes'
    )


def test_url_media_show_their_url_and_detail() -> None:
    message = user(
        ImageBlock(UrlSource("image/jpeg", "https://example.com/cat.jpg"), detail="high"),
        VideoBlock(UrlSource("video/mp4", "https://example.com/clip.mp4")),
    )
    assert describe_message(message) == (
        "user: image image/jpeg url https://example.com/cat.jpg (detail high); "
        "video video/mp4 url https://example.com/clip.mp4"
    )


def test_base64_video_shows_its_decoded_size() -> None:
    data = base64.b64encode(bytes(10)).decode()
    assert describe_message(user(VideoBlock(Base64Source("video/mp4", data)))) == (
        "user: video video/mp4 base64 10 bytes"
    )


def test_tool_use_shows_name_and_input_json() -> None:
    message = LLMMessage(
        role="assistant", content=(ToolUseBlock("call_1", "weather", {"city": "Paris"}),)
    )
    assert describe_message(message) == 'assistant: tool_use weather (id call_1) {"city": "Paris"}'


def test_tool_result_shows_id_and_text_or_parts() -> None:
    parts = (
        TextBlock("chart"),
        ImageBlock(Base64Source("image/png", PNG_1234)),
        FilePart("r.pdf", Base64Source("application/pdf", PNG_1234)),
    )
    message = user(
        ToolResultBlock("call_1", "boom", is_error=True), ToolResultBlock("call_2", parts)
    )
    assert describe_message(message) == (
        'user: tool_result error (id call_1) "boom"; tool_result (id call_2) '
        '[text "chart", image image/png base64 1234 bytes, '
        'file "r.pdf" application/pdf base64 1234 bytes]'
    )


def test_reasoning_is_described_with_its_text() -> None:
    message = LLMMessage(role="assistant", content=(ReasoningBlock("thinking"),))
    assert describe_message(message) == 'assistant: reasoning "thinking"'


async def test_answer_lists_system_prompt_tools_and_every_message() -> None:
    tool = ToolDefinition("weather", "Weather", {"type": "object"})
    req = request(
        user(TextBlock("hi")),
        LLMMessage(role="assistant", content=(TextBlock("hello"),)),
        user(TextBlock("again")),
        system_prompt="Be brief.",
        tools=(tool,),
    )
    response = await EchoProvider().complete(req)
    assert response.message.content == (
        TextBlock(
            'system: "Be brief."\ntools: weather\nuser: text "hi"\n'
            'assistant: text "hello"\nuser: text "again"'
        ),
    )
    assert response.stop_reason == "end_turn"


async def test_usage_is_estimated_from_input_and_output() -> None:
    req = request(user(TextBlock("x" * 40), ImageBlock(Base64Source("image/png", PNG_1234))))
    response = await EchoProvider().complete(req)
    text = response.message.content[0].text  # type: ignore[union-attr]
    assert response.usage.input_tokens == estimate_tokens(req.messages)
    assert response.usage.output_tokens == math.ceil(len(text) / 4)


async def test_stream_yields_several_chunks_then_the_complete_response() -> None:
    req = request(user(TextBlock("a fairly long question that spans chunks")), user(TextBlock("b")))
    events = [event async for event in EchoProvider().stream(req)]
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 3
    assert all(len(d.text) <= 32 for d in deltas)
    assert isinstance(events[-1], ResponseComplete)
    assert events[-1].response == await EchoProvider().complete(req)
    assert "".join(d.text for d in deltas) == events[-1].response.message.content[0].text  # type: ignore[union-attr]


def test_render_describes_the_request_as_json_data() -> None:
    req = request(user(TextBlock("hi")), system_prompt="S", max_tokens=5)
    body = EchoProvider().render(req)
    assert body == {
        "model": None,
        "system": "S",
        "messages": dump_messages(req.messages),
        "max_tokens": 5,
    }


async def test_echo_is_a_provider_that_closes() -> None:
    provider = EchoProvider()
    assert isinstance(provider, Provider)
    await provider.aclose()
    assert provider.closed


def test_echo_is_registered_and_carries_every_block() -> None:
    spec = PluginHost(load_entrypoints=False).provider_spec("echo")
    assert spec.capabilities == Capabilities.everything()
    assert isinstance(spec.factory(ProviderSettings()), EchoProvider)


@pytest.mark.parametrize("stream", [False, True])
async def test_the_agent_runs_offline_on_echo_by_default(stream: bool) -> None:
    agent = Agent(AgentConfig(name="a"), plugins=PluginHost(load_entrypoints=False))
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_1234},
    }
    conversation = [{"role": "user", "content": [{"type": "text", "text": "What?"}, image]}]
    if stream:
        events = [event async for event in agent.stream(conversation)]
        result = events[-1].data
        assert [e.type for e in events].count("text") >= 2
    else:
        result = await agent.run(conversation)
    assert result.output == 'user: text "What?"; image image/png base64 1234 bytes'


async def test_echo_describes_roles_block_types_text_and_media() -> None:
    conv = [
        user_turn(
            "hello echo",
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ),
        assistant_turn("reply"),
        user_turn(
            {
                "type": "video",
                "source": {
                    "type": "url",
                    "media_type": "video/mp4",
                    "url": "https://example.com/clip.mp4",
                },
            }
        ),
    ]
    result = await Agent(AgentConfig(name="e")).run(conv)
    out = result.output
    assert result.success
    for piece in ("user", "assistant", "text", "image", "video", "hello echo", "reply"):
        assert piece in out
    assert "image/png" in out and "base64" in out and str(PNG_BYTES) in out
    assert "video/mp4" in out and "https://example.com/clip.mp4" in out and "url" in out
    assert PNG not in out


async def test_echo_shortens_text_past_200_characters() -> None:
    out = (await Agent(AgentConfig(name="e")).run("a" * 300 + " " + "b" * 200)).output
    assert "a" * 150 in out
    assert "a" * 201 not in out and "b" * 200 not in out
    full = (await Agent(AgentConfig(name="e")).run("c" * 200)).output
    assert "c" * 200 in full

    line = describe_message(user(TextBlock("a" * 250)))
    assert line == f'user: text "{"a" * 200}..." (250 characters)'


async def test_echo_streams_in_chunks() -> None:
    events = [e async for e in Agent(AgentConfig(name="e")).stream("hello " * 20)]
    texts = [e for e in events if e.type == "text"]
    assert len(texts) > 1
    assert "".join(e.data for e in texts) == events[-1].data.output


async def test_echo_names_tool_blocks() -> None:
    conv = [
        user_turn("q"),
        tool_call_turn("zoom", {"f": 2}),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "zoomed"}],
        },
    ]
    out = (await Agent(AgentConfig(name="e")).run(conv)).output
    assert "tool_use" in out and "tool_result" in out
