"""Trimming prompt history by tokens: oldest turns first, tool pairs kept together."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core._history import trim_history
from oma_core.messages import LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock


def user(text: str) -> LLMMessage:
    return LLMMessage("user", (TextBlock(text),))


def assistant(text: str) -> LLMMessage:
    return LLMMessage("assistant", (TextBlock(text),))


def call(call_id: str) -> LLMMessage:
    return LLMMessage("assistant", (ToolUseBlock(call_id, "lookup", {}),))


def result(call_id: str) -> LLMMessage:
    return LLMMessage("user", (ToolResultBlock(call_id, "found"),))


def ten_each(messages: Sequence[LLMMessage]) -> int:
    """A simple estimator: every message costs 10 tokens."""
    return 10 * len(messages)


def test_history_within_the_limit_is_kept_whole() -> None:
    messages = (user("a"), assistant("b"), user("c"))
    assert trim_history(messages, 30, ten_each) == messages


def test_oldest_turns_are_dropped_first() -> None:
    messages = (user("a"), assistant("b"), user("c"), assistant("d"), user("e"))
    assert trim_history(messages, 30, ten_each) == messages[2:]


def test_the_kept_part_starts_with_a_user_turn() -> None:
    messages = (user("a"), assistant("b"), user("c"), assistant("d"), user("e"))
    # 40 tokens would fit assistant("b") onwards, but a conversation may not start there
    assert trim_history(messages, 40, ten_each) == messages[2:]


def test_a_tool_use_is_never_separated_from_its_result() -> None:
    messages = (
        user("a"),
        call("t1"),
        result("t1"),
        assistant("b"),
        user("c"),
    )
    trimmed = trim_history(messages, 30, ten_each)
    assert trimmed == (user("c"),)  # cutting at result("t1") is not allowed
    assert not isinstance(trimmed[0].content[0], ToolResultBlock)


def test_a_tool_pair_fits_whole_or_not_at_all() -> None:
    messages = (
        user("x"),
        assistant("y"),
        user("a"),
        call("t1"),
        result("t1"),
        assistant("b"),
        user("c"),
    )
    trimmed = trim_history(messages, 50, ten_each)
    assert trimmed == messages[2:]
    assert call("t1") in trimmed and result("t1") in trimmed


def test_the_newest_turn_is_kept_even_over_the_limit() -> None:
    messages = (user("a"), assistant("b"), user("c" * 1000))
    assert trim_history(messages, 5, ten_each) == (user("c" * 1000),)


def test_default_estimator_counts_characters() -> None:
    messages = (user("x" * 400), assistant("y" * 400), user("z" * 40))
    assert trim_history(messages, 20) == (user("z" * 40),)
    assert trim_history(messages, 1000) == messages


def _conversation(shape: list[str]) -> tuple[LLMMessage, ...]:
    """Build a conversation from a shape: "u" user text, "a" assistant text, "t" a tool round
    (an assistant tool call, then the user turn with its result)."""
    messages: list[LLMMessage] = []
    for index, kind in enumerate(shape):
        if kind == "u":
            messages.append(user(f"u{index}"))
        elif kind == "a":
            messages.append(assistant(f"a{index}"))
        else:
            messages.extend((call(f"t{index}"), result(f"t{index}")))
    return tuple(messages)


def _is_cut(message: LLMMessage) -> bool:
    return message.role == "user" and not any(
        isinstance(block, ToolResultBlock) for block in message.content
    )


@settings(max_examples=200, deadline=None)
@given(
    shape=st.lists(st.sampled_from("uat"), min_size=1, max_size=12).map(lambda s: ["u", *s]),
    limit=st.integers(min_value=1, max_value=200),
)
def test_trimming_keeps_the_longest_safe_tail_that_fits(shape: list[str], limit: int) -> None:
    messages = _conversation(shape)
    trimmed = trim_history(messages, limit, ten_each)
    start = len(messages) - len(trimmed)
    assert trimmed == messages[start:]  # a tail
    assert _is_cut(trimmed[0])  # starts at a user turn without tool results
    calls = {b.id for m in trimmed for b in m.content if isinstance(b, ToolUseBlock)}
    results = {b.tool_use_id for m in trimmed for b in m.content if isinstance(b, ToolResultBlock)}
    assert calls == results  # no tool_use without its tool_result, and no orphan result
    cuts = [i for i, m in enumerate(messages) if _is_cut(m)]
    if start != cuts[-1]:  # more than the newest turn was kept: it all fits
        assert ten_each(trimmed) <= limit
    earlier = [i for i in cuts if i < start]
    if earlier:  # the next longer safe tail would not fit
        assert ten_each(messages[earlier[-1] :]) > limit
