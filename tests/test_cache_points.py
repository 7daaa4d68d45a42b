"""``CachePoint``: the block that ends a cacheable prefix. Where it may stand (user turns, never
alone), its JSON shape, that it is a hint (no capability check refuses it, a provider that
declares no caching never receives it), ``AgentConfig.cache`` and ``ProviderRequest.cache``, and
``oma plugins`` showing each provider's caching."""

from __future__ import annotations

import json
import pickle
from typing import Any

import attrs
import pytest
from _builders import oma
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    Capabilities,
    InvalidMessageError,
    LLMMessage,
    TextBlock,
    dump_messages,
    estimate_tokens,
    load_messages,
)
from oma_core.capabilities import BlockSupport, CacheSupport
from oma_core.messages import BLOCK_TYPES, CachePoint, strip_hints
from oma_core.providers import ProviderRequest
from oma_core.testing import ScriptedProvider

POINT = {"type": "cache_point"}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


# -- the block ----------------------------------------------------------------------------------


def test_a_cache_point_is_registered_as_a_user_only_hint() -> None:
    kind = BLOCK_TYPES["cache_point"]
    assert (kind.cls, kind.roles, kind.family, kind.hint) == (
        CachePoint,
        frozenset({"user"}),
        None,
        True,
    )
    assert kind.keys == frozenset({"type"})
    assert not any(k.hint for tag, k in BLOCK_TYPES.items() if tag != "cache_point")


def test_a_cache_point_has_no_fields_and_its_json_is_its_type() -> None:
    point = CachePoint()
    assert point.type == "cache_point"
    assert attrs.fields(CachePoint) == ()
    assert point == CachePoint() and hash(point) == hash(CachePoint())
    assert pickle.loads(pickle.dumps(point)) == point
    message = LLMMessage("user", [TextBlock("long document"), point])
    assert dump_messages([message]) == [{"role": "user", "content": [text("long document"), POINT]}]
    assert load_messages(dump_messages([message])) == (message,)


@pytest.mark.parametrize(
    ("messages", "path", "says"),
    [
        ([{"role": "assistant", "content": [text("a"), POINT]}], "messages[0].content[1]", "user"),
        ([user(POINT)], "messages[0].content", "besides"),
        ([user(POINT, POINT)], "messages[0].content", "besides"),
        ([user(text("a"), {"type": "cache_point", "ttl": "1h"})], "messages[0].content[1].ttl", ""),
        (
            [user({"type": "tool_result", "tool_use_id": "t", "content": [text("a"), POINT]})],
            "messages[0].content[0].content[1].type",
            "",
        ),
    ],
)
def test_a_misplaced_cache_point_is_refused_naming_its_place(
    messages: list[Any], path: str, says: str
) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        load_messages(messages)
    assert caught.value.path == path
    assert says in str(caught.value)


def test_objects_follow_the_same_rules() -> None:
    with pytest.raises(InvalidMessageError, match="user messages"):
        LLMMessage("assistant", [TextBlock("a"), CachePoint()])
    with pytest.raises(InvalidMessageError, match="besides"):
        LLMMessage("user", [CachePoint()])


def test_a_cache_point_costs_no_tokens_in_the_estimate() -> None:
    plain = [user(text("x" * 400))]
    marked = [user(text("x" * 400), POINT)]
    assert estimate_tokens(marked) == estimate_tokens(plain) == 100


BLOCK = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=5)),
    st.just(POINT),
)


@given(st.lists(st.lists(BLOCK, min_size=1, max_size=5), min_size=1, max_size=4))
def test_markers_load_when_a_turn_has_content_and_strip_to_the_content(
    turns: list[list[dict[str, Any]]],
) -> None:
    data = [user(*blocks) for blocks in turns]
    valid = all(any(b["type"] != "cache_point" for b in blocks) for blocks in turns)
    if not valid:
        with pytest.raises(InvalidMessageError, match="besides"):
            load_messages(data)
        return
    messages = load_messages(data)
    assert dump_messages(messages) == data  # the markers keep their places
    assert load_messages(dump_messages(messages)) == messages
    stripped = strip_hints(messages)
    assert dump_messages(stripped) == [
        user(*[b for b in blocks if b["type"] != "cache_point"]) for blocks in turns
    ]
    if all(b["type"] != "cache_point" for blocks in turns for b in blocks):
        assert stripped is messages  # nothing to leave out: the very tuple


# -- a hint: never refused, left out where it is not carried -------------------------------------

TEXT_ONLY = Capabilities.text_only()
MARKERS = Capabilities((BlockSupport("text"),), caching=CacheSupport(max_markers=2))
IMPLICIT = Capabilities(
    (BlockSupport("text"),), caching=CacheSupport(max_markers=0, places=(), implicit=True)
)


def test_no_capability_check_refuses_a_cache_point() -> None:
    messages = load_messages([user(text("a"), POINT, text("b"))])
    for capabilities in (TEXT_ONLY, MARKERS, IMPLICIT):
        capabilities.check(messages, "probe")  # raises nothing


@pytest.mark.parametrize(
    ("capabilities", "kept"), [(TEXT_ONLY, False), (IMPLICIT, False), (MARKERS, True)]
)
def test_only_a_provider_that_places_markers_receives_them(
    capabilities: Capabilities, kept: bool
) -> None:
    messages = load_messages([user(text("a"), POINT), user(text("b"))])
    outgoing = capabilities.outgoing(messages)
    assert (outgoing == messages) is kept
    if not kept:
        assert dump_messages(outgoing) == [user(text("a")), user(text("b"))]


def test_cache_support_refuses_what_it_cannot_mean() -> None:
    with pytest.raises(ValueError, match="places"):
        CacheSupport(places={"history"})
    with pytest.raises(ValueError, match="max_markers"):
        CacheSupport(max_markers=-1)


async def test_a_run_on_a_provider_without_caching_accepts_cache_points() -> None:
    provider = ScriptedProvider(["done"], capabilities=TEXT_ONLY)
    async with Agent(AgentConfig(name="t", provider=provider)) as agent:
        result = await agent.run(load_messages([user(text("big prefix"), POINT, text("ask"))]))
    assert result.success, result.status
    (request,) = provider.requests
    assert dump_messages(request.messages) == [user(text("big prefix"), text("ask"))]


async def test_a_run_on_a_provider_with_markers_passes_them_and_the_setting_on() -> None:
    provider = ScriptedProvider(["done"], capabilities=MARKERS)
    config = AgentConfig(name="t", provider=provider, cache="auto")
    async with Agent(config) as agent:
        result = await agent.run(load_messages([user(text("big prefix"), POINT, text("ask"))]))
    assert result.success, result.status
    (request,) = provider.requests
    assert dump_messages(request.messages) == [user(text("big prefix"), POINT, text("ask"))]
    assert request.cache == "auto"


# -- the setting ----------------------------------------------------------------------------------


@given(
    st.one_of(
        st.none(), st.just("auto"), st.text(max_size=6), st.booleans(), st.integers(), st.just(())
    )
)
def test_agent_config_cache_is_auto_or_none(value: Any) -> None:
    if value is None or value == "auto":
        assert AgentConfig(name="t", cache=value).cache == value
        return
    with pytest.raises(ValueError, match='cache must be "auto" or None'):
        AgentConfig(name="t", cache=value)


def test_a_request_carries_the_setting() -> None:
    messages = load_messages([user(text("a"))])
    assert ProviderRequest("m", messages).cache is None
    assert ProviderRequest("m", messages, cache="auto").cache == "auto"


# -- oma plugins ----------------------------------------------------------------------------------


def test_the_everything_capabilities_declare_no_caching() -> None:
    # echo and caller-made providers without capabilities never see a marker
    assert Capabilities.everything().caching is None


@pytest.mark.usefixtures("cli_home")
def test_oma_plugins_shows_caching_per_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin")
    data = json.loads(oma("plugins", "--json").stdout)
    assert data["providers"]["echo"]["caching"] is None
    out = oma("plugins").stdout
    assert "Prompt caching" in out
    lines = out[out.index("Prompt caching") :].splitlines()
    assert any(line.split()[:2] == ["echo", "no"] for line in lines), out
