"""Prompt caching on OpenAI, on both APIs' bodies: explicit breakpoints only for models that
take them, at most the documented number, a stable ``prompt_cache_key`` for ``cache="auto"``
(the caller's own winning), and the system prompt's breakpoint on the Responses API.

The kit (``cache_checks``, run by both conformance suites) checks the markers reach the wire
and the cache counts come back; these check what is OpenAI's own."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oma_openai import preset
from oma_openai.caching import takes_breakpoints
from oma_openai.convert import request_body
from oma_openai.responses_request import responses_body
from test_openai_conformance import read_chat_cache_markers
from test_openai_responses_conformance import read_responses_cache_markers

from oma_core import LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock
from oma_core.messages import CachePoint
from oma_core.testing.cache_checks import CacheMarker
from oma_core.toolkit import ProviderRequest, ToolDefinition

OPENAI = preset("openai")
TOOL = ToolDefinition("lookup", "Look a word up.", {"type": "object", "properties": {}})


def _user(*blocks: Any) -> LLMMessage:
    return LLMMessage("user", blocks)


def _chat(request: ProviderRequest, **options: Any) -> dict[str, Any]:
    return request_body(request, OPENAI, stream=False, options=options)


def _responses(request: ProviderRequest, **options: Any) -> dict[str, Any]:
    return responses_body(request, OPENAI, stream=False, options=options)


@pytest.mark.parametrize(
    ("model", "takes"),
    [
        ("gpt-5.6", True),
        ("gpt-5.6-mini", True),
        ("gpt-5.10", True),
        ("gpt-6", True),
        ("ft:gpt-5.6:acme::abc", True),
        ("my-own-model", True),  # unknown: sent, for the service to judge
        ("gpt-5.5", False),
        ("gpt-5.1-chat-latest", False),
        ("gpt-5", False),
        ("gpt-5-mini", False),
        ("gpt-4o-mini", False),
        ("o4-mini", False),
        ("chatgpt-4o-latest", False),
    ],
)
def test_explicit_breakpoints_go_to_gpt_5_6_and_later_only(model: str, takes: bool) -> None:
    assert takes_breakpoints(model) is takes


@pytest.mark.parametrize("render", [_chat, _responses], ids=["chat", "responses"])
def test_a_model_before_gpt_5_6_gets_no_breakpoint_but_the_cache_key(render: Any) -> None:
    messages = (_user(TextBlock("long document"), CachePoint(), TextBlock("question")),)
    body = render(ProviderRequest("gpt-4o", messages, "system", cache="auto"))
    assert "prompt_cache_breakpoint" not in json.dumps(body)
    assert "cache_point" not in json.dumps(body)
    assert body["prompt_cache_key"].startswith("oma-")


@pytest.mark.parametrize("render", [_chat, _responses], ids=["chat", "responses"])
def test_cache_auto_keys_an_agents_requests_alike_and_others_apart(render: Any) -> None:
    def key(system: str, question: str, tools: tuple[ToolDefinition, ...] = (TOOL,)) -> str:
        request = ProviderRequest("gpt-5.6", (_user(TextBlock(question)),), system, tools,
                                  cache="auto")  # fmt: skip
        value: str = render(request)["prompt_cache_key"]
        return value

    first = key("You answer briefly.", "What is a cat?")
    assert key("You answer briefly.", "And a dog?") == first  # the same prefix: the same key
    assert key("You answer at length.", "What is a cat?") != first
    assert key("You answer briefly.", "What is a cat?", ()) != first
    assert len(first) <= 64


@pytest.mark.parametrize("render", [_chat, _responses], ids=["chat", "responses"])
def test_a_cache_key_given_in_the_options_wins(render: Any) -> None:
    request = ProviderRequest("gpt-5.6", (_user(TextBlock("hi")),), cache="auto")
    body = render(request, prompt_cache_key="tenant-42", prompt_cache_options={"ttl": "12h"})
    assert body["prompt_cache_key"] == "tenant-42"
    assert body["prompt_cache_options"] == {"ttl": "12h"}


@pytest.mark.parametrize("render", [_chat, _responses], ids=["chat", "responses"])
def test_without_cache_auto_no_key_is_sent(render: Any) -> None:
    body = render(ProviderRequest("gpt-5.6", (_user(TextBlock("hi"), CachePoint()),)))
    assert "prompt_cache_key" not in body


@pytest.mark.parametrize(
    ("render", "read"),
    [(_chat, read_chat_cache_markers), (_responses, read_responses_cache_markers)],
    ids=["chat", "responses"],
)
@pytest.mark.parametrize(("options", "limit"), [({}, 3), ({"mode": "explicit"}, 4)])
def test_past_the_limit_the_oldest_breakpoints_are_left_out_with_a_note(
    render: Any, read: Any, options: dict[str, str], limit: int, caplog: pytest.LogCaptureFixture
) -> None:
    texts = [f"part {n}" for n in range(6)]
    blocks = [b for t in texts for b in (TextBlock(t), CachePoint())]
    request = ProviderRequest("gpt-5.6", (_user(*blocks),))
    extra = {"prompt_cache_options": options} if options else {}
    with caplog.at_level(logging.WARNING, logger="oma.openai"):
        body = render(request, **extra)
    assert read(body) == [CacheMarker("messages", t) for t in texts[-limit:]]
    assert f"{6 - limit} cache breakpoint(s) left out, the oldest" in caplog.text


def test_on_the_responses_api_the_system_prompts_breakpoint_moves_it_into_the_input() -> None:
    request = ProviderRequest("gpt-5.6", (_user(TextBlock("hi")),), "Answer briefly.",
                              cache="auto")  # fmt: skip
    body = _responses(request)
    assert "instructions" not in body
    assert body["input"][0] == {
        "role": "system",
        "content": [{"type": "input_text", "text": "Answer briefly.",
                     "prompt_cache_breakpoint": {"mode": "explicit"}}],
    }  # fmt: skip
    assert read_responses_cache_markers(body) == [
        CacheMarker("system", "Answer briefly."),
        CacheMarker("messages", "hi"),
    ]


@pytest.mark.parametrize(
    ("render", "read"),
    [(_chat, read_chat_cache_markers), (_responses, read_responses_cache_markers)],
    ids=["chat", "responses"],
)
def test_a_cache_point_after_a_tool_result_marks_the_tool_output(render: Any, read: Any) -> None:
    messages = (
        _user(TextBlock("look it up")),
        LLMMessage("assistant", (ToolUseBlock("call_1", "lookup", {}),)),
        _user(ToolResultBlock("call_1", "a long result"), CachePoint()),
    )
    body = render(ProviderRequest("gpt-5.6", messages, tools=(TOOL,)))
    assert read(body) == [CacheMarker("messages", "a long result")]


@pytest.mark.parametrize(
    ("render", "read"),
    [(_chat, read_chat_cache_markers), (_responses, read_responses_cache_markers)],
    ids=["chat", "responses"],
)
def test_a_cache_point_first_in_a_turn_marks_the_earlier_user_part_not_the_assistants(
    render: Any, read: Any
) -> None:
    messages = (
        _user(TextBlock("the document")),
        LLMMessage("assistant", (TextBlock("Read it."),)),
        _user(CachePoint(), TextBlock("question")),
    )
    body = render(ProviderRequest("gpt-5.6", messages))
    assert read(body) == [CacheMarker("messages", "the document")]


_BLOCK = st.one_of(
    st.text(alphabet="abc", min_size=1, max_size=3).map(TextBlock), st.just(CachePoint())
)
_TURN = st.lists(_BLOCK, min_size=1, max_size=6).filter(
    lambda blocks: any(isinstance(b, TextBlock) for b in blocks)
)


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(_TURN, min_size=1, max_size=4),
    system=st.sampled_from([None, "sys"]),
    auto=st.booleans(),
    explicit=st.booleans(),
)
def test_any_conversation_carries_at_most_the_limit_and_never_on_an_assistant_part(
    turns: list[list[Any]], system: str | None, auto: bool, explicit: bool
) -> None:
    messages: list[LLMMessage] = []
    for blocks in turns:
        messages += [_user(*blocks), LLMMessage("assistant", (TextBlock("ok"),))]
    request = ProviderRequest("gpt-5.6", tuple(messages[:-1]), system,
                              cache="auto" if auto else None)  # fmt: skip
    options = {"prompt_cache_options": {"mode": "explicit"}} if explicit else {}
    limit = 4 if explicit else 3
    for render, read in ((_chat, read_chat_cache_markers),
                         (_responses, read_responses_cache_markers)):  # fmt: skip
        body = render(request, **options)
        text = json.dumps(body)
        assert "cache_point" not in text
        assert len(read(body)) == text.count("prompt_cache_breakpoint") <= limit
        wanted = auto or any(isinstance(b, CachePoint) for m in messages for b in m.content)
        if not wanted:
            assert "prompt_cache_breakpoint" not in text
