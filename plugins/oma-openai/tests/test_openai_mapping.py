"""Each block's Chat Completions form, checked on the request the fake service received."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions, Reply
from oma_openai.provider import OpenAIChatProvider
from openai_builders import (
    MP4_B64,
    PDF_B64,
    PNG_B64,
    assistant,
    image_b64,
    image_link,
    provider_for,
    request,
    text,
    tool_result,
    tool_use,
    user,
)

from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    ProviderError,
    ReasoningBlock,
    UnsupportedContentBlockError,
    load_messages,
)
from oma_core.toolkit import ToolDefinition


def sent(server: FakeChatCompletions) -> dict[str, Any]:
    """The body of the one request the server received."""
    assert len(server.requests) == 1, server.requests
    body: dict[str, Any] = server.requests[0].json
    return body


async def test_text_turn_is_a_user_message_with_bearer_auth(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    response = await openai_provider.complete(request("Hi there"))
    [req] = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer test-key"
    assert req.json["messages"] == [{"role": "user", "content": "Hi there"}]
    assert req.json["model"] == "gpt-test"
    assert response.message.content[0].text == "Hello from the fake service."  # type: ignore[union-attr]


async def test_system_prompt_is_the_first_message(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    await openai_provider.complete(request("Hi", system_prompt="Be brief."))
    assert sent(server)["messages"][0] == {"role": "system", "content": "Be brief."}


async def test_several_text_blocks_are_text_parts_in_order(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    await openai_provider.complete(request([user(text("a"), text("b"))]))
    assert sent(server)["messages"][0]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]


async def test_base64_image_is_a_data_url_with_detail(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    block = {**image_b64(), "detail": "low"}
    await openai_provider.complete(request([user(text("what?"), block)]))
    part = sent(server)["messages"][0]["content"][1]
    assert part == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG_B64}", "detail": "low"},
    }


async def test_url_image_is_sent_verbatim_without_detail(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    url = "https://example.com/cat.jpg?size=large"
    await openai_provider.complete(request([user(image_link(url, "image/jpeg"))]))
    part = sent(server)["messages"][0]["content"][0]
    assert part == {"type": "image_url", "image_url": {"url": url}}


async def test_video_is_forwarded_and_a_strict_service_refuses_it_with_400(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    video = {
        "type": "video",
        "source": {"type": "base64", "media_type": "video/mp4", "data": MP4_B64},
    }
    with pytest.raises(ProviderError) as info:
        await openai_provider.complete(request([user(text("watch"), video)]))
    assert info.value.status_code == 400
    assert info.value.retryable is False
    assert info.value.provider == "OpenAI"
    assert "video_url" in str(info.value)
    assert MP4_B64 not in str(info.value)
    part = server.requests[0].json["messages"][0]["content"][1]
    assert part == {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{MP4_B64}"}}


async def test_video_is_forwarded_to_minimax_which_accepts_it(
    compatible_server: FakeChatCompletions,
) -> None:
    provider = provider_for(compatible_server, "minimax")
    url = "https://example.com/clip.mp4"
    video = {"type": "video", "source": {"type": "url", "media_type": "video/mp4", "url": url}}
    response = await provider.complete(request([user(video, text("describe"))]))
    await provider.aclose()
    body = sent(compatible_server)
    assert body["messages"][0]["content"][0] == {"type": "video_url", "video_url": {"url": url}}
    assert response.message.role == "assistant"


async def test_tool_calls_and_results_round_trip(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    conversation = [
        user(text("weather in Paris?")),
        assistant(text("Checking."), tool_use("call_1", "weather", {"city": "Paris", "n": [1, 2]})),
        user(tool_result("call_1", "sunny"), text("thanks")),
    ]
    await openai_provider.complete(request(conversation))
    messages = sent(server)["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Paris", "n": [1, 2]}'},
            }
        ],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
    assert messages[3] == {"role": "user", "content": "thanks"}


async def test_assistant_with_only_tool_calls_has_no_content(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    conversation = [
        user(text("go")),
        assistant(tool_use("a", "f", {}), tool_use("b", "g", {"x": 1})),
        user(tool_result("a", "1"), tool_result("b", [text("2"), text("3")])),
    ]
    await openai_provider.complete(request(conversation))
    messages = sent(server)["messages"]
    assert "content" not in messages[1]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["a", "b"]
    assert messages[2] == {"role": "tool", "tool_call_id": "a", "content": "1"}
    assert messages[3]["content"] == [{"type": "text", "text": "2"}, {"type": "text", "text": "3"}]
    assert len(messages) == 4  # no user message: nothing but tool results in that turn


async def test_error_tool_result_is_marked_in_its_text(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    conversation = [
        user(text("go")),
        assistant(tool_use("a", "f", {})),
        user(tool_result("a", "boom", is_error=True)),
    ]
    await openai_provider.complete(request(conversation))
    assert sent(server)["messages"][2]["content"] == "Error: boom"


async def test_tool_result_media_go_in_a_following_user_message(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }
    pdf = {
        "type": "file",
        "filename": "report.pdf",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
    }
    conversation = [
        user(text("screenshot please")),
        assistant(tool_use("shot", "screenshot", {})),
        user(tool_result("shot", [text("here it is"), image, pdf]), text("what do you see?")),
    ]
    await openai_provider.complete(request(conversation))
    messages = sent(server)["messages"]
    assert messages[2] == {"role": "tool", "tool_call_id": "shot", "content": "here it is"}
    assert messages[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Media returned by tool call shot:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            {
                "type": "file",
                "file": {
                    "filename": "report.pdf",
                    "file_data": f"data:application/pdf;base64,{PDF_B64}",
                },
            },
            {"type": "text", "text": "what do you see?"},
        ],
    }


async def test_media_only_tool_result_says_where_its_media_went(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    url = "https://example.com/chart.png"
    conversation = [
        user(text("chart")),
        assistant(tool_use("c", "chart", {})),
        user(tool_result("c", [image_link(url)])),
    ]
    await openai_provider.complete(request(conversation))
    messages = sent(server)["messages"]
    assert "next user message" in messages[2]["content"]
    assert messages[3]["content"][1] == {"type": "image_url", "image_url": {"url": url}}


async def test_tools_are_function_definitions(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [ToolDefinition("weather", "Current weather.", schema)]
    await openai_provider.complete(request("hi", tools=tools))
    assert sent(server)["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Current weather.",
                "parameters": schema,
            },
        }
    ]


async def test_openai_gets_max_completion_tokens_and_temperature(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    await openai_provider.complete(request("hi", max_tokens=50, temperature=0.3))
    body = sent(server)
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body
    assert body["temperature"] == 0.3


async def test_compatible_presets_get_max_tokens(compatible_server: FakeChatCompletions) -> None:
    provider = provider_for(compatible_server, "minimax")
    await provider.complete(request("hi", max_tokens=50))
    await provider.aclose()
    body = sent(compatible_server)
    assert body["max_tokens"] == 50
    assert "max_completion_tokens" not in body


async def test_request_options_become_body_fields(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    await openai_provider.complete(request("hi", options={"seed": 7, "model": "ignored"}))
    body = sent(server)
    assert body["seed"] == 7
    assert body["model"] == "gpt-test"


async def test_default_model_is_used_when_none_is_given(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    await openai_provider.complete(request("hi", model=None))
    assert sent(server)["model"] == "gpt-4o-mini"


def test_render_is_the_body_complete_sends(openai_provider: OpenAIChatProvider) -> None:
    req = request([user(text("hi"), image_b64())], system_prompt="s", max_tokens=5)
    body = openai_provider.render(req)
    assert list(body) == ["model", "messages", "max_completion_tokens"]
    assert body["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png")


async def test_wire_bytes_are_json_of_the_rendered_body(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    """The SDK sends compact UTF-8 JSON; the rendered dict, dumped the same way, is identical
    byte for byte (key order and all)."""
    req = request(
        [user(text("héllo ✓"), image_b64()), assistant(text("ok")), user(text("again"))],
        system_prompt="s",
        max_tokens=9,
        temperature=0.5,
        tools=[ToolDefinition("t", "d", {"type": "object"})],
    )
    await openai_provider.complete(req)
    expected = json.dumps(
        openai_provider.render(req), ensure_ascii=False, separators=(",", ":")
    ).encode()
    assert server.requests[0].body == expected


async def test_reasoning_history_is_refused_on_chat_completions_before_any_request(
    server: FakeChatCompletions,
) -> None:
    # openai declares reasoning (its Responses API carries it); Chat Completions cannot.
    provider = provider_for(server)
    with pytest.raises(UnsupportedContentBlockError) as info:
        provider.render(request([assistant({"type": "reasoning", "text": "x"}), user(text("b"))]))
    assert info.value.block_type == "reasoning"
    assert server.requests == []


async def test_deepseek_forwards_reasoning_as_reasoning_content(
    compatible_server: FakeChatCompletions,
) -> None:
    provider = provider_for(compatible_server, "deepseek")
    conversation = [
        user(text("q")),
        assistant({"type": "reasoning", "text": "think"}, text("answer")),
        user(text("more")),
    ]
    await provider.complete(request(conversation))
    await provider.aclose()
    assert sent(compatible_server)["messages"][1] == {
        "role": "assistant",
        "content": "answer",
        "reasoning_content": "think",
    }


async def test_deepseek_keeps_reasoning_of_its_reply(
    compatible_server: FakeChatCompletions,
) -> None:
    compatible_server.reply(Reply(text="42", reasoning="Let me think."))
    provider = provider_for(compatible_server, "deepseek")
    response = await provider.complete(request("q"))
    await provider.aclose()
    assert [b.type for b in response.message.content] == ["reasoning", "text"]
    assert response.message.content[0] == ReasoningBlock("Let me think.", provider="deepseek")


@pytest.mark.parametrize("name", ["openai", "deepseek"])
async def test_another_providers_signed_reasoning_is_not_sent(
    server: FakeChatCompletions, compatible_server: FakeChatCompletions, name: str
) -> None:
    """Anthropic's signed thinking in the history reaches neither OpenAI (which has no place
    for reasoning) nor DeepSeek (whose ``reasoning_content`` would carry another model's
    thoughts): the turn goes without it, and the run is not refused."""
    target = server if name == "openai" else compatible_server
    signed = {"type": "reasoning", "text": "t", "signature": "sig", "provider": "anthropic"}
    conversation = load_messages(
        [user(text("q")), assistant(signed, text("answer")), user(text("more"))]
    )
    config = AgentConfig(
        "t", provider=name, base_url=target.base_url, api_key=API_KEY, model="gpt-test"
    )
    async with Agent(config) as agent:
        result = await agent.run(conversation)
    assert result.success, result.status.error
    assert sent(target)["messages"][1] == {"role": "assistant", "content": "answer"}


async def test_reasoning_is_not_kept_where_it_cannot_be_sent_back(
    compatible_server: FakeChatCompletions,
) -> None:
    compatible_server.reply(Reply(text="42", reasoning="Let me think."))
    provider = provider_for(compatible_server, "minimax")
    response = await provider.complete(request("q"))
    await provider.aclose()
    assert [b.type for b in response.message.content] == ["text"]


def test_mm_file_references_are_refused_by_core_validation() -> None:
    """MiniMax's private mm_file:// references never reach a provider."""
    with pytest.raises(InvalidMessageError) as info:
        load_messages([user(image_link("mm_file://abc"))])
    assert info.value.path == "messages[0].content[0].source.url"
    video = {
        "type": "video",
        "source": {"type": "url", "media_type": "video/mp4", "url": "mm_file://v"},
    }
    with pytest.raises(InvalidMessageError):
        load_messages([user(video)])


def test_mm_file_image_helper_is_refused() -> None:
    from oma_core import image_url

    with pytest.raises(InvalidMessageError):
        image_url("mm_file://abc", "image/png")


async def test_assistant_images_never_reach_the_service(server: FakeChatCompletions) -> None:
    from oma_openai import preset

    conversation = load_messages([user(text("q")), assistant(image_b64()), user(text("b"))])
    with pytest.raises(UnsupportedContentBlockError):
        preset("openai").capabilities.check(conversation, "OpenAI Chat Completions")
    provider = provider_for(server)
    with pytest.raises(UnsupportedContentBlockError):
        provider.render(request([user(text("q")), assistant(image_b64()), user(text("b"))]))
