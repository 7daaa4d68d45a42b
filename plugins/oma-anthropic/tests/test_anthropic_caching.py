"""Prompt caching on the Messages API, through the fake service (which refuses a malformed
``cache_control`` or more than four, as the API does) and the SDK's own types: ``CachePoint``
blocks as breakpoints on the block before them, ``cache="auto"`` marking the last tool, the
system prompt and the latest user turn, the oldest past four left out with a note, and the cache
counts of a reply in ``Usage`` on every transport, streamed or not."""

from __future__ import annotations

import json
import logging
from typing import Any

import pydantic
import pytest
from anthropic.types import message_create_params
from click.testing import CliRunner
from fake_anthropic import FakeAnthropic
from hypothesis import given
from hypothesis import strategies as st
from oma_anthropic import CAPABILITIES, create_provider
from oma_anthropic.caching import MAX_BREAKPOINTS

from oma_core import Agent, AgentConfig, Usage, load_messages
from oma_core.cli import cli
from oma_core.errors import OptionTypeError
from oma_core.providers import ProviderRequest, ToolDefinition
from oma_core.toolkit import ProviderSettings

PARAMS = pydantic.TypeAdapter(message_create_params.MessageCreateParamsNonStreaming)
EPHEMERAL = {"type": "ephemeral"}
POINT = {"type": "cache_point"}
MODEL = "claude-sonnet-4-6"
TOOLS = (
    ToolDefinition("lookup", "Look a word up.", {"type": "object", "properties": {}}),
    ToolDefinition("search", "Search the corpus.", {"type": "object", "properties": {}}),
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def marked(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": EPHEMERAL}


def render(messages: list[Any], **request: Any) -> dict[str, Any]:
    """The body the provider would send (checked against the SDK's type of the body)."""
    provider = create_provider(ProviderSettings(api_key="test-key"))
    body = provider.render(ProviderRequest(MODEL, load_messages(messages), **request))
    PARAMS.validate_python(body)
    return body


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where ``body`` holds ``cache_control``, in the order the API caches."""
    found = [f"tools.{i}" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system.{i}" for i, b in enumerate(system) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        found += [
            f"messages.{i}.{j}" for j, b in enumerate(message["content"]) if "cache_control" in b
        ]
    return found


# -- CachePoint blocks ---------------------------------------------------------------------------


async def test_a_cache_point_marks_the_block_before_it_on_the_wire(server: FakeAnthropic) -> None:
    server.reply_text("ok")
    config = AgentConfig(
        name="t", provider="anthropic", model=MODEL, base_url=server.url, api_key="test-key"
    )
    question = load_messages([user(text("a long contract"), POINT, text("who signs?"))])
    async with Agent(config) as agent:
        result = await agent.run(question)
    assert result.success, result.status
    body = server.requests[0].json
    PARAMS.validate_python(body)
    assert body["messages"] == [
        user(marked(text("a long contract")), text("who signs?"))  # the marker itself: gone
    ]


def test_a_cache_point_after_a_turn_marks_that_turn_s_last_block() -> None:
    body = render(
        [
            user(text("first")),
            {"role": "assistant", "content": [text("answer")]},
            user(POINT, text("next")),
        ]
    )
    assert breakpoints(body) == ["messages.1.0"]


def test_a_cache_point_skips_thinking_blocks_which_cannot_hold_one() -> None:
    thinking = {"type": "reasoning", "text": "t", "signature": "sig", "provider": "anthropic"}
    body = render(
        [
            user(text("first")),
            {"role": "assistant", "content": [text("answer"), thinking]},
            user(POINT, text("next")),
        ]
    )
    assert breakpoints(body) == ["messages.1.0"]
    assert "cache_control" not in body["messages"][1]["content"][1]


@pytest.mark.parametrize(
    ("request_", "where"),
    [
        ({"system_prompt": "You are terse.", "tools": TOOLS}, ["system.0"]),
        ({"tools": TOOLS}, ["tools.1"]),
        ({"system_prompt": "", "tools": TOOLS}, ["tools.1"]),  # an empty text cannot hold one
        ({}, []),  # nothing before it to cache
    ],
)
def test_a_leading_cache_point_ends_the_tools_and_system_prompt(
    request_: dict[str, Any], where: list[str]
) -> None:
    body = render([user(POINT, text("question"))], **request_)
    assert breakpoints(body) == where
    if where == ["system.0"]:
        assert body["system"] == [marked(text("You are terse."))]


def test_two_cache_points_at_one_place_make_one_breakpoint() -> None:
    body = render([user(text("doc"), POINT, POINT, text("q"))])
    assert breakpoints(body) == ["messages.0.0"]


# -- cache="auto" ------------------------------------------------------------------------------


def test_auto_marks_the_last_tool_the_system_prompt_and_the_latest_user_turn() -> None:
    body = render(
        [user(text("first")), {"role": "assistant", "content": [text("a")]}, user(text("now"))],
        system_prompt="You are terse.",
        tools=TOOLS,
        cache="auto",
    )
    assert breakpoints(body) == ["tools.1", "system.0", "messages.2.0"]


def test_auto_moves_with_a_tool_loop_onto_the_latest_tool_result() -> None:
    call = {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "c1", "content": "42"}
    body = render(
        [user(text("look it up")), {"role": "assistant", "content": [call]}, user(result)],
        tools=TOOLS,
        cache="auto",
    )
    assert breakpoints(body) == ["tools.1", "messages.2.0"]


def test_without_a_cache_point_or_auto_the_body_holds_no_breakpoint() -> None:
    body = render([user(text("q"))], system_prompt="s", tools=TOOLS)
    assert breakpoints(body) == [] and body["system"] == "s"


async def test_auto_reaches_the_service_on_every_transport(
    server: FakeAnthropic, provider: Any
) -> None:
    server.reply_text("ok")
    request = ProviderRequest(MODEL, load_messages([user(text("q"))]), "sys", TOOLS, cache="auto")
    response = await provider.complete(request)
    assert response.message.content[0].text == "ok"
    assert breakpoints(server.requests[0].json) == ["tools.1", "system.0", "messages.0.0"]


# -- the lifetime -------------------------------------------------------------------------------

HOUR = {"type": "ephemeral", "ttl": "1h"}


def test_cache_ttl_1h_puts_the_hour_on_every_breakpoint() -> None:
    body = render(
        [user(text("doc"), POINT, text("q"))],
        system_prompt="s",
        tools=TOOLS,
        cache="auto",
        options={"cache_ttl": "1h"},
    )
    controls = [
        body["tools"][1]["cache_control"],
        body["system"][0]["cache_control"],
        *(b["cache_control"] for b in body["messages"][0]["content"]),
    ]
    assert controls == [HOUR] * 4
    assert "cache_ttl" not in body  # an option of oma's, not a field of the API


def test_cache_ttl_5m_is_the_default_lifetime_sent_as_no_ttl() -> None:
    body = render([user(text("doc"), POINT)], options={"cache_ttl": "5m"})
    assert body["messages"][0]["content"][0]["cache_control"] == EPHEMERAL


@pytest.mark.parametrize("value", ["2h", "1H", 3600, "", True])
def test_a_cache_ttl_other_than_5m_or_1h_is_refused_naming_the_option(value: Any) -> None:
    with pytest.raises(OptionTypeError) as caught:
        create_provider(ProviderSettings(api_key="test-key", options={"cache_ttl": value}))
    assert (caught.value.option, caught.value.name) == ("cache_ttl", "anthropic")
    assert 'provider_options["cache_ttl"]' in str(caught.value)


async def test_the_one_hour_cache_reaches_the_service_on_every_transport(
    server: FakeAnthropic, transport: str
) -> None:
    server.reply_text("ok")
    config = AgentConfig(
        name="t",
        provider="anthropic",
        model=MODEL,
        base_url=server.url,
        api_key="test-key",
        provider_options={"transport": transport, "cache_ttl": "1h"},
    )
    async with Agent(config) as agent:
        result = await agent.run(load_messages([user(text("doc"), POINT, text("q"))]))
    assert result.success, result.status
    body = server.requests[0].json
    PARAMS.validate_python(body)
    assert body["messages"][0]["content"][0]["cache_control"] == HOUR


# -- the limit ----------------------------------------------------------------------------------


def test_past_four_the_oldest_are_left_out_with_a_note(caplog: pytest.LogCaptureFixture) -> None:
    messages = [user(text(f"part {i}"), POINT) for i in range(4)]
    with caplog.at_level(logging.WARNING, logger="oma_anthropic"):
        body = render(messages, system_prompt="s", tools=TOOLS, cache="auto")
    # wanted: tools.1, system.0 and messages 0..3 (the latest also the auto one): six
    assert breakpoints(body) == [f"messages.{i}.0" for i in range(4)]
    assert [r.getMessage() for r in caplog.records] == [
        f"{MODEL}: 2 cache breakpoint(s) left out, the oldest: the Messages API takes at most "
        "4 in a request"
    ]


def test_a_top_level_cache_control_counts_against_the_limit() -> None:
    messages = [user(text(f"part {i}"), POINT) for i in range(4)]
    body = render(messages, options={"extra_body": {"cache_control": EPHEMERAL}})
    assert breakpoints(body) == [f"messages.{i}.0" for i in range(1, 4)]


async def test_the_fake_refuses_what_the_service_refuses(server: FakeAnthropic) -> None:
    """The limit is the service's: five breakpoints are a 400, not something oma invented."""
    import httpx

    body = render([user(text(f"part {i}")) for i in range(1)])
    body["messages"] = [user(marked(text(f"p{i}"))) for i in range(5)]
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{server.url}/v1/messages",
            json=body,
            headers={"x-api-key": "test-key", "anthropic-version": "2023-06-01"},
        )
    assert reply.status_code == 400
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in reply.text


USER_BLOCKS = st.lists(
    st.one_of(
        st.builds(text, st.text("ab ", min_size=1, max_size=4).filter(str.strip)), st.just(POINT)
    ),
    min_size=1,
    max_size=6,
).filter(lambda blocks: any(b != POINT for b in blocks))


@given(
    st.lists(USER_BLOCKS, min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_any_request_holds_at_most_four_breakpoints_on_blocks_that_take_one(
    turns: list[list[dict[str, Any]]], auto: bool, system: bool, tools: bool
) -> None:
    messages: list[Any] = []
    for i, blocks in enumerate(turns):
        if i:
            messages.append({"role": "assistant", "content": [text(f"reply {i}")]})
        messages.append(user(*blocks))
    body = render(
        messages,
        system_prompt="sys" if system else None,
        tools=TOOLS if tools else (),
        cache="auto" if auto else None,
    )
    where = breakpoints(body)
    assert len(where) <= MAX_BREAKPOINTS
    points = sum(b == POINT for blocks in turns for b in blocks)
    if not auto and not points:
        assert where == []
    if auto:  # the latest user turn's last block always keeps its breakpoint
        last = len([b for b in turns[-1] if b != POINT]) - 1
        assert where[-1] == f"messages.{len(body['messages']) - 1}.{last}"
    assert "cache_point" not in json.dumps(body)
    stripped = render(
        [{**m, "content": [b for b in m["content"] if b != POINT]} for m in messages],
        system_prompt="sys" if system else None,
        tools=TOOLS if tools else (),
    )
    assert _without_breakpoints(body) == stripped  # breakpoints are all that changed


def _without_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    plain = json.loads(json.dumps(body))
    for tool in plain.get("tools", []):
        tool.pop("cache_control", None)
    if isinstance(plain.get("system"), list):
        plain["system"] = plain["system"][0]["text"]
    for message in plain["messages"]:
        for block in message["content"]:
            block.pop("cache_control", None)
    return plain


# -- usage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_cache_reads_and_writes_are_counted_in_usage(
    server: FakeAnthropic, provider: Any, stream: bool
) -> None:
    server.reply_text(
        "ok",
        input_tokens=20,
        output_tokens=5,
        usage={"cache_read_input_tokens": 3000, "cache_creation_input_tokens": 500},
    )
    request = ProviderRequest(MODEL, load_messages([user(text("doc"), POINT, text("q"))]))
    if stream:
        events = [event async for event in provider.stream(request)]
        response = events[-1].response
    else:
        response = await provider.complete(request)
    assert response.usage == Usage(
        input_tokens=3520, output_tokens=5, cache_read_tokens=3000, cache_write_tokens=500
    )


# -- what the provider declares -----------------------------------------------------------------


def test_the_provider_declares_four_breakpoints_everywhere() -> None:
    caching = CAPABILITIES.caching
    assert caching is not None
    assert (caching.max_markers, caching.places, caching.implicit) == (
        4,
        frozenset({"tools", "system", "messages"}),
        False,
    )


def test_oma_plugins_shows_the_caching() -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    caching = json.loads(result.output)["providers"]["anthropic"]["caching"]
    assert caching["max_markers"] == 4
    assert caching["places"] == ["tools", "system", "messages"]
