"""Prompt caching on Converse, through the fake service (which refuses a malformed
``cachePoint``, more than four, tools checkpoints outside Claude and checkpoints on a model that
does not cache, as the service does) and botocore's own service model: ``CachePoint`` blocks as
``cachePoint`` blocks after the block before them, ``cache="auto"`` after the last tool, the
system prompt and the latest user turn, the oldest past four left out with a note, the
one-hour lifetime from ``provider_options["cache_ttl"]``, and the cache counts of a reply in
``Usage``, streamed or not."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from botocore_model import assert_botocore_takes
from click.testing import CliRunner
from fake_bedrock import FakeBedrock
from hypothesis import given
from hypothesis import strategies as st
from oma_bedrock import CAPABILITIES, create_provider
from oma_bedrock.caching import MAX_CHECKPOINTS

from oma_core import Agent, AgentConfig, Usage, load_messages
from oma_core.capabilities import UnsupportedSettingError
from oma_core.cli import cli
from oma_core.errors import OptionTypeError
from oma_core.providers import ProviderRequest, ToolDefinition
from oma_core.toolkit import ProviderSettings

CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "amazon.nova-pro-v1:0"
POINT = {"type": "cache_point"}
CHECKPOINT = {"cachePoint": {"type": "default"}}
HOUR = {"cachePoint": {"type": "default", "ttl": "1h"}}
TOOLS = (
    ToolDefinition("lookup", "Look a word up.", {"type": "object", "properties": {}}),
    ToolDefinition("search", "Search the corpus.", {"type": "object", "properties": {}}),
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def render(
    messages: list[Any], model: str = CLAUDE, options: dict[str, Any] | None = None, **request: Any
) -> dict[str, Any]:
    """The body the provider would send, checked against botocore's ``Converse`` input."""
    provider = create_provider(ProviderSettings(options={"region": "us-east-1", **(options or {})}))
    body = provider.render(ProviderRequest(model, load_messages(messages), **request))
    assert_botocore_takes(body, "Converse")
    return body


def checkpoints(body: dict[str, Any]) -> list[str]:
    """Where ``body`` holds ``cachePoint`` blocks, in the order Converse caches."""
    tools = (body.get("toolConfig") or {}).get("tools") or []
    found = [f"tools.{i}" for i, t in enumerate(tools) if "cachePoint" in t]
    found += [f"system.{i}" for i, b in enumerate(body.get("system") or []) if "cachePoint" in b]
    for i, message in enumerate(body["messages"]):
        found += [
            f"messages.{i}.{j}" for j, b in enumerate(message["content"]) if "cachePoint" in b
        ]
    return found


# -- CachePoint blocks ---------------------------------------------------------------------------


async def test_a_cache_point_is_a_checkpoint_after_the_block_before_it(
    server: FakeBedrock,
) -> None:
    server.reply_text("ok")
    config = AgentConfig(name="t", provider="bedrock", model=CLAUDE, base_url=server.url)
    question = load_messages([user(text("a long contract"), POINT, text("who signs?"))])
    async with Agent(config) as agent:
        result = await agent.run(question)
    assert result.success, result.status
    body = server.requests[0].json
    assert_botocore_takes(body, "Converse")
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"text": "a long contract"}, CHECKPOINT, {"text": "who signs?"}],
        }
    ]


def test_a_cache_point_opening_a_turn_follows_the_turn_before() -> None:
    body = render(
        [
            user(text("first")),
            {"role": "assistant", "content": [text("answer")]},
            user(POINT, text("next")),
        ]
    )
    assert checkpoints(body) == ["messages.1.1"]
    assert body["messages"][2]["content"] == [{"text": "next"}]


def test_a_cache_point_skips_reasoning_which_cannot_end_a_prefix() -> None:
    reasoning = {"type": "reasoning", "text": "t", "signature": "sig", "provider": "bedrock"}
    body = render(
        [
            user(text("first")),
            {"role": "assistant", "content": [text("answer"), reasoning]},
            user(POINT, text("next")),
        ]
    )
    assert checkpoints(body) == ["messages.1.1"]
    assert "reasoningContent" in body["messages"][1]["content"][2]


@pytest.mark.parametrize(
    ("request_", "where"),
    [
        ({"system_prompt": "You are terse.", "tools": TOOLS}, ["system.1"]),
        ({"tools": TOOLS}, ["tools.2"]),
        ({}, []),  # nothing before it to cache
    ],
)
def test_a_leading_cache_point_ends_the_tools_and_system_prompt(
    request_: dict[str, Any], where: list[str]
) -> None:
    body = render([user(POINT, text("question"))], **request_)
    assert checkpoints(body) == where


def test_two_cache_points_at_one_place_make_one_checkpoint() -> None:
    body = render([user(text("doc"), POINT, POINT, text("q"))])
    assert checkpoints(body) == ["messages.0.1"]


# -- cache="auto" ------------------------------------------------------------------------------


def test_auto_marks_the_last_tool_the_system_prompt_and_the_latest_user_turn() -> None:
    body = render(
        [user(text("first")), {"role": "assistant", "content": [text("a")]}, user(text("now"))],
        system_prompt="You are terse.",
        tools=TOOLS,
        cache="auto",
    )
    assert checkpoints(body) == ["tools.2", "system.1", "messages.2.1"]
    assert body["toolConfig"]["tools"][2] == CHECKPOINT


def test_auto_moves_with_a_tool_loop_onto_the_latest_tool_result() -> None:
    call = {"type": "tool_use", "id": "c1", "name": "lookup", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "c1", "content": "42"}
    body = render(
        [user(text("look it up")), {"role": "assistant", "content": [call]}, user(result)],
        tools=TOOLS,
        cache="auto",
    )
    assert checkpoints(body) == ["tools.2", "messages.2.1"]


def test_nova_caches_the_system_prompt_and_messages_not_the_tools() -> None:
    body = render([user(text("q"))], NOVA, system_prompt="s", tools=TOOLS, cache="auto")
    assert checkpoints(body) == ["system.1", "messages.0.1"]


def test_a_model_without_caching_is_sent_no_checkpoint_with_a_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = "meta.llama3-3-70b-instruct-v1:0"
    with caplog.at_level(logging.WARNING, logger="oma_bedrock"):
        body = render([user(text("doc"), POINT, text("q"))], model, system_prompt="s", cache="auto")
    assert checkpoints(body) == []
    assert body["messages"] == [{"role": "user", "content": [{"text": "doc"}, {"text": "q"}]}]
    assert [r.getMessage() for r in caplog.records] == [
        f"{model}: cache markers left out: Bedrock documents prompt caching for Claude and "
        "Nova models only"
    ]


def test_without_a_cache_point_or_auto_the_body_holds_no_checkpoint() -> None:
    body = render([user(text("q"))], system_prompt="s", tools=TOOLS)
    assert checkpoints(body) == [] and body["system"] == [{"text": "s"}]


# -- the lifetime -------------------------------------------------------------------------------


def test_cache_ttl_1h_puts_the_hour_on_every_checkpoint() -> None:
    body = render(
        [user(text("doc"), POINT, text("q"))],
        options={"cache_ttl": "1h"},
        system_prompt="s",
        tools=TOOLS,
        cache="auto",
    )
    tools = body["toolConfig"]["tools"]
    assert [tools[2], body["system"][1], *body["messages"][0]["content"][1::2]] == [HOUR] * 4


def test_cache_ttl_5m_is_the_default_lifetime_sent_as_no_ttl() -> None:
    body = render([user(text("doc"), POINT)], options={"cache_ttl": "5m"})
    assert body["messages"][0]["content"][1] == CHECKPOINT


@pytest.mark.parametrize("value", ["2h", "1H", 3600, "", True])
def test_a_cache_ttl_other_than_5m_or_1h_is_refused_naming_the_option(value: Any) -> None:
    with pytest.raises(OptionTypeError) as caught:
        create_provider(ProviderSettings(options={"cache_ttl": value}))
    assert caught.value.option == "cache_ttl"
    assert caught.value.name == "bedrock"
    assert 'provider_options["cache_ttl"]' in str(caught.value)


def test_the_one_hour_cache_on_nova_is_refused_before_any_request() -> None:
    with pytest.raises(UnsupportedSettingError) as caught:
        render([user(text("doc"), POINT)], NOVA, options={"cache_ttl": "1h"})
    assert (caught.value.setting, caught.value.model) == ("cache_ttl", NOVA)


async def test_the_one_hour_cache_reaches_the_service(server: FakeBedrock) -> None:
    server.reply_text("ok")
    options = {"cache_ttl": "1h"}
    config = AgentConfig(
        name="t", provider="bedrock", model=CLAUDE, base_url=server.url, provider_options=options
    )
    async with Agent(config) as agent:
        result = await agent.run(load_messages([user(text("doc"), POINT, text("q"))]))
    assert result.success, result.status
    assert server.requests[0].json["messages"][0]["content"][1] == HOUR


# -- the limit ----------------------------------------------------------------------------------


def test_past_four_the_oldest_are_left_out_with_a_note(caplog: pytest.LogCaptureFixture) -> None:
    messages = [user(text(f"part {i}"), POINT) for i in range(4)]
    merged = [user(*[b for m in messages for b in m["content"]])]
    with caplog.at_level(logging.WARNING, logger="oma_bedrock"):
        body = render(merged, system_prompt="s", tools=TOOLS, cache="auto")
    # wanted: after the tools, the system prompt and parts 0..3 (the last also auto): six
    assert checkpoints(body) == [f"messages.0.{2 * i + 1}" for i in range(4)]
    assert [r.getMessage() for r in caplog.records] == [
        f"{CLAUDE}: 2 cache checkpoint(s) left out, the oldest: Converse takes at most 4 in a "
        "request"
    ]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda b: b["messages"][0]["content"].extend([CHECKPOINT] * 5), "A maximum of 4"),
        (lambda b: b["messages"][0]["content"].append({"cachePoint": {}}), "'default'"),
        (
            lambda b: b["messages"][0]["content"].append(
                {"cachePoint": {"type": "default", "ttl": "2h"}}
            ),
            "'5m' or '1h'",
        ),
    ],
)
async def test_the_fake_refuses_what_the_service_refuses(
    server: FakeBedrock, provider: Any, change: Any, says: str
) -> None:
    """The rules are the service's: a fifth checkpoint is a ValidationException, not something
    oma invented; so is a malformed one."""
    from oma_core import ProviderError

    class Broken:
        def render(self, request: ProviderRequest) -> dict[str, Any]:
            body: dict[str, Any] = original(request)
            change(body)
            return body

    original = provider.render
    provider.render = Broken().render
    request = ProviderRequest(CLAUDE, load_messages([user(text("q"))]))
    with pytest.raises(ProviderError) as caught:
        await provider.complete(request)
    assert caught.value.status_code == 400 and says in str(caught.value)


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
    st.sampled_from([CLAUDE, NOVA]),
)
def test_any_request_holds_at_most_four_checkpoints_each_after_a_block(
    turns: list[list[dict[str, Any]]], auto: bool, system: bool, tools: bool, model: str
) -> None:
    messages: list[Any] = []
    for i, blocks in enumerate(turns):
        if i:
            messages.append({"role": "assistant", "content": [text(f"reply {i}")]})
        messages.append(user(*blocks))
    request = {
        "system_prompt": "sys" if system else None,
        "tools": TOOLS if tools else (),
    }
    body = render(messages, model, **request, cache="auto" if auto else None)
    where = checkpoints(body)
    assert len(where) <= MAX_CHECKPOINTS
    points = sum(b == POINT for blocks in turns for b in blocks)
    if not auto and not points:
        assert where == []
    if model == NOVA:
        assert not any(w.startswith("tools") for w in where)
    for message in body["messages"]:  # never first, never two in a row
        kinds = ["cachePoint" in b for b in message["content"]]
        assert not kinds[0] and "True, True" not in str(kinds)
    if auto:  # the latest user turn ends with its checkpoint
        assert body["messages"][-1]["content"][-1] == CHECKPOINT
    assert "cache_point" not in json.dumps(body)
    stripped = render(
        [{**m, "content": [b for b in m["content"] if b != POINT]} for m in messages],
        model,
        **request,
    )
    assert _without_checkpoints(body) == stripped  # checkpoints are all that changed


def _without_checkpoints(body: dict[str, Any]) -> dict[str, Any]:
    plain = json.loads(json.dumps(body))
    if "toolConfig" in plain:
        plain["toolConfig"]["tools"] = [t for t in plain["toolConfig"]["tools"] if "toolSpec" in t]
    if "system" in plain:
        plain["system"] = [b for b in plain["system"] if "text" in b]
    for message in plain["messages"]:
        message["content"] = [b for b in message["content"] if "cachePoint" not in b]
    return plain


# -- usage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_cache_reads_and_writes_are_counted_in_usage(
    server: FakeBedrock, provider: Any, stream: bool
) -> None:
    server.reply_text("ok", input_tokens=20, output_tokens=5, cache_read=3000, cache_write=500)
    request = ProviderRequest(CLAUDE, load_messages([user(text("doc"), POINT, text("q"))]))
    if stream:
        events = [event async for event in provider.stream(request)]
        response = events[-1].response
    else:
        response = await provider.complete(request)
    assert response.usage == Usage(
        input_tokens=3520, output_tokens=5, cache_read_tokens=3000, cache_write_tokens=500
    )


# -- what the provider declares -----------------------------------------------------------------


def test_the_provider_declares_four_checkpoints_everywhere() -> None:
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
    caching = json.loads(result.output)["providers"]["bedrock"]["caching"]
    assert caching["max_markers"] == 4
    assert caching["places"] == ["tools", "system", "messages"]
