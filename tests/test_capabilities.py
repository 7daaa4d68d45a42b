"""A provider that cannot carry a block refuses it locally, before any request, and is never
retried.
"""

from __future__ import annotations

import base64

import pytest
from _builders import (
    REFERENCE_PNG,
    builtin_host,
    named_image,
    png_block,
    png_image,
    stream_events,
    text_block,
    user_turn,
    video_block,
    vision_agent,
)
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    Capabilities,
    InvalidMessageError,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    ProviderError,
    ProviderSpec,
    UnsupportedContentBlockError,
    hookimpl,
    image_base64,
    image_url,
    load_messages,
)
from oma_core.capabilities import MediaLimit
from oma_core.errors import MediaTooLargeError
from oma_core.media import decoded_size
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import BlockSupport


class _TextOnlyPlugin:
    def __init__(self) -> None:
        self.provider = ScriptedProvider(["never"])

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        return [
            ProviderSpec(
                name="textonly",
                display_name="Text Only",
                factory=lambda settings: self.provider,
                capabilities=Capabilities.text_only(),
            )
        ]


async def test_an_unsupported_block_fails_before_any_io_and_is_never_retried(
    host: PluginHost,
) -> None:
    plugin = _TextOnlyPlugin()
    agent = Agent(
        AgentConfig(name="t", provider="textonly", max_retries=3, retry_delay=0.01),
        plugins=builtin_host(plugin),
    )
    result = await agent.run([user_turn("look", named_image("a.png"))])
    assert not result.success
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error).startswith('Text Only cannot represent the "image" content block')
    assert plugin.provider.requests == []

    provider = ScriptedProvider(
        ["never"], display_name="Text Only", capabilities=Capabilities((BlockSupport("text"),))
    )
    agent = Agent(AgentConfig(name="a", provider=provider, max_retries=5), plugins=host)
    result = await agent.run([{"role": "user", "content": [png_image()]}])
    assert result.status.code == "error"
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error).startswith('Text Only cannot represent the "image" content block')
    assert provider.requests == []


async def test_a_supported_request_reaches_a_text_only_provider() -> None:
    plugin = _TextOnlyPlugin()
    agent = Agent(AgentConfig(name="t", provider="textonly"), plugins=builtin_host(plugin))
    assert (await agent.run("only text")).output == "never"


async def test_an_unsupported_block_in_stream_is_an_error_event() -> None:
    plugin = _TextOnlyPlugin()
    agent = Agent(AgentConfig(name="t", provider="textonly"), plugins=builtin_host(plugin))
    events = [e async for e in agent.stream([user_turn(named_image("a.png"))])]
    assert [e.type for e in events][-2:] == ["error", "done"]
    assert isinstance(events[-2].data, UnsupportedContentBlockError)


async def test_a_provider_that_cannot_carry_a_block_refuses_it_instead_of_dropping_it() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    agent = Agent(AgentConfig(name="t", provider=provider), plugins=builtin_host())
    result = await agent.run([user_turn("What is this?", png_block())])
    assert not result.success
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert result.status.error.block_type == "image"
    assert provider.requests == []


async def test_a_stream_with_an_unsupported_block_ends_with_error_then_done() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    agent = Agent(AgentConfig(name="t", provider=provider), plugins=builtin_host())
    events = await stream_events(agent, [user_turn("x", video_block())])
    assert [e.type for e in events] == ["error", "done"]
    assert isinstance(events[0].data, UnsupportedContentBlockError)
    assert events[1].data.status.error is events[0].data


async def test_an_unsupported_block_is_terminal_and_never_retried() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, max_retries=3, plugins=builtin_host())
    result = await oma.run_agent(
        AgentConfig(name="t", provider=provider), [user_turn("x", video_block())], max_retries=3
    )
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.retryable is False and error.code == "UNSUPPORTED_CONTENT_BLOCK"
    assert [e for e in progress if e.type == "retry"] == []
    assert provider.requests == []


async def test_a_provider_error_for_a_forwarded_block_follows_the_normal_failure_path() -> None:
    refusal = ProviderError("video_url is not supported by this model", status_code=400)
    agent, provider = vision_agent([refusal])
    result = await agent.run([user_turn("x", video_block())])  # returns, does not raise
    assert not result.success
    assert result.status.code == "error"
    assert result.status.error is refusal
    assert len(provider.requests) == 1  # forwarded, and refused by the service, not by oma
    events = await stream_events(vision_agent([refusal])[0], [user_turn("x", video_block())])
    assert [e.type for e in events][-2:] == ["error", "done"]


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
async def test_oma_does_not_infer_a_vision_flag_from_the_model_name() -> None:
    pytest.importorskip("oma_openai")
    config = AgentConfig(name="o", provider="openai", model="gpt-3.5-turbo", api_key="k")
    agent = Agent(config, plugins=PluginHost())
    request = agent.build_request([user_turn("What is it?", png_block("url"))])
    body = agent.provider().render(request)
    parts = body["input"][-1]["content"]  # the Responses API, OpenAI's default
    assert [p["type"] for p in parts] == ["input_text", "input_image"]
    await agent.aclose()


async def test_a_provider_that_takes_url_images_only_refuses_base64_at_run_time() -> None:
    # the reference's Mistral row, declared the oma way: URL images only
    url_only = Capabilities(
        (BlockSupport("text"), BlockSupport("image", sources=frozenset({"url"})))
    )
    provider = ScriptedProvider(["url ok", "never"], capabilities=url_only, display_name="Mistral")
    agent = Agent(AgentConfig(name="m", provider=provider), plugins=builtin_host())
    assert (await agent.prompt([image_url("https://example.com/a.png"), text_block("x")])).success
    result = await agent.run([user_turn(image_base64(REFERENCE_PNG, "image/png"), "x")])
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error) == (
        'Mistral cannot represent the "image" content block: '
        "base64 sources are not supported in a user message"
    )
    assert len(provider.requests) == 1


def test_the_reference_typescript_block_shapes_are_not_oma_blocks() -> None:
    # imageUrl()/imageBase64() of the other framework build {type: "image_url"} and
    # {type: "image_base64"}; oma has one "image" block with a source, and no magic keys
    for block in (
        {"type": "image_url", "url": "https://example.com/a.png"},
        {"type": "image_base64", "data": REFERENCE_PNG, "mimeType": "image/png"},
        {**png_block(), "mimeType": "image/png"},
    ):
        with pytest.raises(InvalidMessageError):
            load_messages([user_turn(block)])


# -- media size limits: documented limits, refused before any request --------------------------


def _png_of(size: int) -> str:
    """Base64 of ``size`` bytes (the content does not matter to a size check)."""
    return base64.b64encode(b"\x89" * size).decode("ascii")


LIMITED = Capabilities(
    Capabilities.everything().blocks,
    limits=(
        MediaLimit(100, {"image"}),
        MediaLimit(120, {"image"}, measure="base64"),
        MediaLimit(250, scope="request", option="inline_limit"),
    ),
)


def _limited_agent(**options: object) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(["ok"] * 3)
    spec = ProviderSpec("limited", "Limited", lambda _s: provider, LIMITED)
    host = PluginHost(load_entrypoints=False)

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [spec]

    host.register(Plugin(), name="limited-plugin")
    config = AgentConfig(name="a", provider="limited", provider_options=options)
    return Agent(config, plugins=host), provider


def test_an_image_past_the_per_block_limit_is_refused_before_any_request() -> None:
    agent, provider = _limited_agent()
    turn = [
        {"role": "user", "content": [text_block("look"), image_base64(_png_of(101), "image/png")]}
    ]
    result = agent.run_sync(turn)
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert isinstance(error, UnsupportedContentBlockError)
    assert (error.path, error.size, error.limit, error.scope) == (
        "messages[0].content[1]",
        101,
        100,
        "block",
    )
    assert "messages[0].content[1] is 101 bytes" in str(error)
    assert "past the limit of 100 bytes per image; send it by URL" in str(error)
    assert provider.requests == []


def test_a_limit_counted_in_base64_counts_the_characters_sent() -> None:
    agent, provider = _limited_agent()
    data = _png_of(93)  # 93 bytes fit the decoded limit; their 124 base64 characters do not
    result = agent.run_sync([{"role": "user", "content": [image_base64(data, "image/png")]}])
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert (error.size, error.limit, error.measure) == (124, 120, "base64")
    assert "of base64" in str(error) and provider.requests == []


def test_the_request_limit_counts_every_inline_block_and_names_the_one_that_crossed_it() -> None:
    agent, provider = _limited_agent()
    images = [image_base64(_png_of(90), "image/png") for _ in range(3)]
    result = agent.run_sync([{"role": "user", "content": images}])
    error = result.status.error
    assert isinstance(error, MediaTooLargeError)
    assert (error.scope, error.path, error.size) == ("request", "messages[0].content[2]", 270)
    assert "inline_limit" in str(error) and provider.requests == []


def test_a_provider_option_named_by_the_limit_replaces_it() -> None:
    agent, provider = _limited_agent(inline_limit=1000)
    images = [image_base64(_png_of(90), "image/png") for _ in range(3)]
    assert agent.run_sync([{"role": "user", "content": images}]).success
    assert len(provider.requests) == 1


def test_url_sources_are_not_counted() -> None:
    agent, _ = _limited_agent()
    turn = [{"role": "user", "content": [image_url("https://example.com/big.png")] * 5}]
    assert agent.run_sync(turn).success


def test_limit_warnings_list_every_limit_a_request_breaks() -> None:
    messages = load_messages(
        [{"role": "user", "content": [image_base64(_png_of(200), "image/png")] * 2}]
    )
    warnings = LIMITED.limit_warnings(messages, "Limited")
    assert len(warnings) == 5  # each image: both block limits; the pair: the request limit
    assert all(w.startswith('Limited cannot represent the "image" content block') for w in warnings)
    assert LIMITED.limit_warnings(load_messages([user_turn("hi")]), "Limited") == []


def test_images_a_tool_returns_are_counted_by_their_place_in_the_tool_result() -> None:
    part = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": _png_of(101)},
    }
    messages = load_messages(
        [
            {"role": "user", "content": [text_block("go")]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [part]}],
            },
        ]
    )
    with pytest.raises(MediaTooLargeError) as caught:
        LIMITED.check(messages, "Limited")
    assert caught.value.path == "messages[2].content[0].content[0]"


def test_a_media_limit_refuses_a_scope_or_measure_it_does_not_know() -> None:
    with pytest.raises(ValueError):
        MediaLimit(1, scope="conversation")
    with pytest.raises(ValueError):
        MediaLimit(1, measure="encoded")


@given(st.binary(max_size=300))
def test_the_decoded_size_from_the_base64_length_is_the_byte_count(payload: bytes) -> None:
    encoded = base64.b64encode(payload).decode("ascii") or "AA=="
    expected = len(payload) if payload else 1
    block = image_base64(encoded.rstrip("="), "image/png")  # unpadded input is normalised
    assert decoded_size(block.source) == expected
    assert MediaLimit(0, measure="base64").size_of(block.source) == len(encoded)
    assert MediaLimit(0).size_of(block.source) == expected


def test_an_agent_lists_the_limits_its_request_would_break_without_sending() -> None:
    agent, provider = _limited_agent()
    turn = [{"role": "user", "content": [image_base64(_png_of(101), "image/png")]}]
    decoded, encoded = agent.limit_warnings(turn)
    assert "messages[0].content[0] is 101 bytes, past the limit of 100 bytes" in decoded
    assert "is 136 bytes of base64, past the limit of 120 bytes of base64" in encoded
    assert agent.limit_warnings("just text") == []
    assert provider.requests == []


def test_the_block_check_can_leave_the_size_limits_to_the_warnings() -> None:
    messages = load_messages(
        [{"role": "user", "content": [image_base64(_png_of(500), "image/png")]}]
    )
    LIMITED.check(messages, "Limited", sizes=False)
    with pytest.raises(MediaTooLargeError):
        LIMITED.check(messages, "Limited")


@given(st.lists(st.integers(min_value=1, max_value=160), min_size=1, max_size=4))
def test_check_refuses_exactly_when_there_are_warnings_and_with_the_first(sizes: list[int]) -> None:
    blocks = [image_base64(_png_of(size), "image/png") for size in sizes]
    messages = load_messages([{"role": "user", "content": blocks}])
    warnings = LIMITED.limit_warnings(messages, "Limited")
    if not warnings:
        LIMITED.check(messages, "Limited")
        return
    with pytest.raises(MediaTooLargeError) as caught:
        LIMITED.check(messages, "Limited")
    assert str(caught.value) == warnings[0]
