"""A reasoning block's signature or redacted data goes back only to the provider that issued
it (``ReasoningBlock.provider``); the rule sits in ``oma_core._reasoning``, which every model
call's request passes through."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    dump_messages,
    load_messages,
)
from oma_core._reasoning import for_provider
from oma_core.errors import InvalidMessageError
from oma_core.messages import user_text
from oma_core.testing import ScriptedProvider

SIGNED = ReasoningBlock("thought", signature="sig/+=", provider="anthropic")
REDACTED = ReasoningBlock("", redacted_data="opaque==", provider="anthropic")


def conversation(*reasoning: ReasoningBlock) -> list[LLMMessage]:
    return [
        user_text("one"),
        LLMMessage("assistant", [*reasoning, TextBlock("first")]),
        user_text("two"),
    ]


async def sent_to(name: str, messages: list[LLMMessage]) -> tuple[LLMMessage, ...]:
    """The messages a run on a provider called ``name`` sends."""
    provider = ScriptedProvider(["ok"], name=name)
    async with Agent(AgentConfig("t", provider=provider)) as agent:
        result = await agent.run(messages)
    assert result.success, result.status
    return provider.requests[0].messages


async def test_another_providers_signed_reasoning_is_left_out_of_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = conversation(SIGNED, REDACTED)
    with caplog.at_level(logging.DEBUG, logger="oma.reasoning"):
        sent = await sent_to("openai", messages)
    assert sent[1] == LLMMessage("assistant", [TextBlock("first")])
    assert (sent[0], sent[2]) == (messages[0], messages[2])
    assert "left 2 reasoning block(s) of messages[1] out of the request to openai" in caplog.text
    assert "sig/+=" not in caplog.text and "opaque" not in caplog.text


async def test_the_issuing_provider_gets_its_reasoning_back_unchanged() -> None:
    messages = conversation(SIGNED, REDACTED)
    sent = await sent_to("anthropic", messages)
    assert sent == tuple(messages)
    assert sent[1].content[0] is SIGNED


async def test_reasoning_without_a_provider_or_a_signature_is_sent_as_before() -> None:
    """A conversation saved before oma recorded the provider keeps today's behaviour; so
    does reasoning text without a token (nothing in it only one service can read)."""
    old = ReasoningBlock("old", signature="sig")
    plain = ReasoningBlock("plain", provider="deepseek")
    messages = conversation(old, plain)
    assert await sent_to("openai", messages) == tuple(messages)


async def test_an_assistant_turn_of_foreign_reasoning_only_is_left_out() -> None:
    messages = [user_text("one"), LLMMessage("assistant", [SIGNED]), user_text("two")]
    assert await sent_to("gemini", messages) == (messages[0], messages[2])


async def test_the_runs_messages_keep_every_block() -> None:
    """Only what is sent changes: the input the caller holds is untouched."""
    messages = conversation(SIGNED)
    provider = ScriptedProvider(["ok"], name="other")
    async with Agent(AgentConfig("t", provider=provider)) as agent:
        await agent.run(messages)
    assert messages[1].content[0] is SIGNED


def test_nothing_left_out_reuses_the_messages() -> None:
    messages = conversation(SIGNED)
    kept = for_provider(messages, "anthropic")
    assert kept == messages and all(a is b for a, b in zip(kept, messages, strict=True))


def test_provider_survives_dump_and_load() -> None:
    dumped = json.loads(json.dumps(dump_messages(conversation(SIGNED, REDACTED))))
    assert dumped[1]["content"][0] == {
        "type": "reasoning",
        "text": "thought",
        "signature": "sig/+=",
        "provider": "anthropic",
    }
    assert list(load_messages(dumped)) == conversation(SIGNED, REDACTED)
    assert "provider" not in dump_messages(conversation(ReasoningBlock("r")))[1]["content"][0]


def test_provider_is_checked_like_the_other_fields() -> None:
    with pytest.raises(InvalidMessageError, match="provider must be a string, got int"):
        ReasoningBlock("r", signature="s", provider=3)  # type: ignore[arg-type]


PROVIDERS = st.sampled_from(["anthropic", "gemini", "openai"])
REASONING = st.builds(
    ReasoningBlock,
    st.text(max_size=5),
    signature=st.one_of(st.none(), st.just("sig")),
    redacted_data=st.one_of(st.none(), st.just("data")),
    provider=st.one_of(st.none(), PROVIDERS),
)
TURNS = st.lists(
    st.one_of(
        st.builds(lambda t: user_text(t), st.text(max_size=5)),
        st.builds(
            lambda blocks: LLMMessage("assistant", blocks),
            st.lists(st.one_of(REASONING, st.builds(TextBlock, st.text(max_size=5))), min_size=1),
        ),
    ),
    max_size=5,
)


@given(TURNS, PROVIDERS)
def test_what_is_sent_never_holds_another_providers_token(
    messages: list[LLMMessage], provider: str
) -> None:
    sent = for_provider(messages, provider)
    blocks = [b for m in sent for b in m.content]
    assert not any(
        isinstance(b, ReasoningBlock)
        and b.provider not in (None, provider)
        and (b.signature or b.redacted_data)
        for b in blocks
    )
    # only such blocks are left out, and in order: every other block is still there
    kept = [
        b
        for m in messages
        for b in m.content
        if not (
            isinstance(b, ReasoningBlock)
            and b.provider not in (None, provider)
            and (b.signature is not None or b.redacted_data is not None)
        )
    ]
    assert blocks == kept
    assert for_provider(sent, provider) == sent
