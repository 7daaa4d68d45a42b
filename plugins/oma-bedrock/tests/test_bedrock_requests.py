"""What the provider sends to Converse: the settings, the model in the path, the region and
the endpoint, video and its limit, and refusals that send (and sign) nothing."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from fake_bedrock import FakeBedrock
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    ProviderError,
    UnsupportedContentBlockError,
    tool,
)
from oma_core.testing.conformance import MEDIA_SAMPLES

MP4 = base64.b64encode(MEDIA_SAMPLES["video/mp4"]).decode()
PNG = base64.b64encode(MEDIA_SAMPLES["image/png"]).decode()


def agent(server: FakeBedrock, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "b",
        "provider": "bedrock",
        "base_url": server.url,
        "max_retries": 0,
    }
    values.update(config)
    return Agent(AgentConfig(**values))


def user(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "look"}, *blocks]}]


def video(media_type: str, data: str = MP4) -> dict[str, Any]:
    return {"type": "video", "source": {"type": "base64", "media_type": media_type, "data": data}}


async def test_temperature_max_tokens_and_stop_go_into_inference_config(
    server: FakeBedrock,
) -> None:
    async with agent(server, temperature=0.25, max_tokens=300, stop=["END"]) as bedrock:
        result = await bedrock.run("hi")
    assert result.success, result.status.error
    assert server.requests[0].json["inferenceConfig"] == {
        "maxTokens": 300,
        "temperature": 0.25,
        "stopSequences": ["END"],
    }


async def test_no_settings_send_no_inference_config(server: FakeBedrock) -> None:
    async with agent(server) as bedrock:
        await bedrock.run("hi")
    assert "inferenceConfig" not in server.requests[0].json


async def test_the_system_prompt_and_tools_are_sent_as_converse_names_them(
    server: FakeBedrock,
) -> None:
    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return q

    async with agent(server, system_prompt="be brief", tools=[lookup]) as bedrock:
        await bedrock.run("hi")
    body = server.requests[0].json
    assert body["system"] == [{"text": "be brief"}]
    spec = body["toolConfig"]["tools"][0]["toolSpec"]
    assert (spec["name"], spec["description"]) == ("lookup", "Look something up.")
    assert spec["inputSchema"]["json"]["properties"]["q"]["type"] == "string"


async def test_a_tool_call_round_trips(server: FakeBedrock) -> None:
    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    server.reply_tool_use("tu_1", "lookup", {"q": "oma"})
    server.reply_text("Found it.")
    async with agent(server, tools=[lookup]) as bedrock:
        result = await bedrock.run("find oma")
    assert result.output == "Found it.", result.status.error
    second = server.requests[1].json["messages"]
    assert second[1]["content"] == [
        {"toolUse": {"toolUseId": "tu_1", "name": "lookup", "input": {"q": "oma"}}}
    ]
    assert second[2]["content"] == [
        {"toolResult": {"toolUseId": "tu_1", "content": [{"text": "found oma"}]}}
    ]


async def test_an_error_tool_result_has_status_error(server: FakeBedrock) -> None:
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True}
            ],
        },
    ]
    async with agent(server) as bedrock:
        result = await bedrock.run(conversation)
    assert result.success, result.status.error
    sent = server.requests[0].json["messages"][2]["content"][0]["toolResult"]
    assert sent == {"toolUseId": "t", "content": [{"text": "boom"}], "status": "error"}


async def test_the_model_id_is_percent_encoded_in_the_path(server: FakeBedrock) -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0"
    async with agent(server, model=arn) as bedrock:
        result = await bedrock.run("hi")
    assert result.success, result.status.error  # the fake checked the signature of this path
    assert server.models == [arn]
    assert (
        server.requests[0].path
        == "/model/" + arn.replace(":", "%3A").replace("/", "%2F") + "/converse"
    )


async def test_the_default_model_is_used_when_none_is_named(server: FakeBedrock) -> None:
    async with agent(server) as bedrock:
        await bedrock.run("hi")
    assert server.models == ["amazon.nova-pro-v1:0"]


async def test_the_region_option_is_the_signing_region(
    fake_server_factory: Callable[..., Any],
) -> None:
    server = fake_server_factory(FakeBedrock, region="eu-west-3")
    async with agent(server, provider_options={"region": "eu-west-3"}) as bedrock:
        result = await bedrock.run("hi")
    assert result.success, result.status.error
    assert "/eu-west-3/bedrock/aws4_request" in server.requests[0].headers["authorization"]


async def test_a_request_signed_for_another_region_is_refused(
    fake_server_factory: Callable[..., Any],
) -> None:
    server = fake_server_factory(FakeBedrock, region="eu-west-3")
    async with agent(server) as bedrock:  # AWS_REGION is us-east-1
        result = await bedrock.run("hi")
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (403, False)


async def test_a_session_token_is_sent_and_signed(
    fake_server_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake_server_factory(FakeBedrock, session_token="FwoGZXIvYXdzEBYa-session")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEBYa-session")
    async with agent(server) as bedrock:
        result = await bedrock.run("hi")
    assert result.success, result.status.error
    assert "x-amz-security-token" in server.requests[0].headers["authorization"]


async def test_a_wrong_secret_fails_the_signature_check(
    server: FakeBedrock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    async with agent(server) as bedrock:
        result = await bedrock.run("hi")
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (403, False)
    assert "InvalidSignatureException" in str(error)


async def test_no_credentials_fail_before_anything_is_sent(
    server: FakeBedrock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    async with agent(server) as bedrock:
        result = await bedrock.run("hi")
    error = result.status.error
    assert isinstance(error, ProviderError) and error.retryable is False
    assert "no AWS credentials" in str(error)
    assert server.requests == []


async def test_a_bedrock_api_key_from_the_environment_is_a_bearer_token(
    fake_server_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake_server_factory(FakeBedrock, api_key="ABSKbedrock-api-key")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrock-api-key")
    async with agent(server) as bedrock:
        result = await bedrock.run("hi")
    assert result.success, result.status.error
    assert server.requests[0].headers["authorization"] == "Bearer ABSKbedrock-api-key"


VIDEO_FORMATS = {
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "video/x-matroska": "mkv",
    "video/webm": "webm",
    "video/x-flv": "flv",
    "video/mpeg": "mpeg",
    "video/x-ms-wmv": "wmv",
    "video/3gpp": "three_gp",
}


@pytest.mark.parametrize(("media_type", "fmt"), sorted(VIDEO_FORMATS.items()))
async def test_each_converse_video_format_is_sent_as_a_video_block_with_its_bytes(
    server: FakeBedrock, media_type: str, fmt: str
) -> None:
    async with agent(server) as bedrock:
        result = await bedrock.run(user(video(media_type)))
    assert result.success, result.status.error
    sent = server.requests[0].json["messages"][0]["content"][1]
    assert sent == {"video": {"format": fmt, "source": {"bytes": MP4}}}


REFUSED = {
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
    "video-avi": user(video("video/x-msvideo")),
    "image-url": user(
        {
            "type": "image",
            "source": {
                "type": "url",
                "media_type": "image/png",
                "url": "https://example.com/a.png",
            },
        }
    ),
    "image-bmp": user(
        {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": PNG}}
    ),
    "video-in-assistant": [
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": [video("video/mp4")]},
        {"role": "user", "content": [{"type": "text", "text": "y"}]},
    ],
}


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_what_converse_cannot_take_is_refused_and_nothing_is_sent(
    server: FakeBedrock, name: str
) -> None:
    async with agent(server) as bedrock:
        result = await bedrock.run(REFUSED[name])
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError), error
    assert error.provider == "Amazon Bedrock"
    assert server.requests == []


async def test_media_past_the_inline_limit_are_refused_naming_it(server: FakeBedrock) -> None:
    big = base64.b64encode(MEDIA_SAMPLES["video/mp4"] + bytes(1000)).decode()
    limit = len(MEDIA_SAMPLES["video/mp4"]) + 999
    async with agent(server, provider_options={"max_inline_bytes": limit}) as bedrock:
        result = await bedrock.run(user(video("video/mp4", big)))
        just_fits = await bedrock.run(user(video("video/mp4", MP4)))
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError), error
    assert error.block_type == "video"
    assert str(limit) in str(error) and "max_inline_bytes" in str(error) and "S3" in str(error)
    assert just_fits.success, just_fits.status.error
    assert len(server.requests) == 1  # only the one that fits


async def test_the_limit_counts_every_medium_of_the_request(server: FakeBedrock) -> None:
    limit = len(MEDIA_SAMPLES["video/mp4"]) + len(MEDIA_SAMPLES["image/png"]) - 1
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    async with agent(server, provider_options={"max_inline_bytes": limit}) as bedrock:
        result = await bedrock.run(user(video("video/mp4"), image))
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "image"
    assert server.requests == []


def test_an_unknown_provider_option_is_refused() -> None:
    from oma_bedrock import create_provider

    from oma_core.errors import PluginError
    from oma_core.toolkit import ProviderSettings

    with pytest.raises(PluginError, match="unknown provider_options for bedrock: colour"):
        create_provider(ProviderSettings(options={"colour": "blue"}))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_the_decoded_size_is_computed_from_the_length_alone(data: bytes) -> None:
    from oma_bedrock.mapping import decoded_size

    assert decoded_size(base64.b64encode(data).decode()) == len(data)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_a_document_name_holds_only_what_converse_allows(filename: str) -> None:
    from fake_bedrock import DOCUMENT_NAME
    from oma_bedrock.mapping import document_name

    assert DOCUMENT_NAME.match(document_name(filename))


async def test_a_conversation_with_tool_calls_but_no_tools_still_declares_them(
    server: FakeBedrock,
) -> None:
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": {"q": 1}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "done"}],
        },
    ]
    async with agent(server) as bedrock:
        result = await bedrock.run(conversation)
    assert result.success, result.status.error  # the fake refuses tool blocks without one
    [spec] = server.requests[0].json["toolConfig"]["tools"]
    assert spec["toolSpec"]["name"] == "lookup"
    assert spec["toolSpec"]["inputSchema"] == {"json": {"type": "object"}}
