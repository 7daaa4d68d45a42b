"""The stream mapping's shortcut for the common chunk (a piece of text and nothing else)
makes what the full mapping makes, for every chunk, as the SDK builds it and as the direct
transport reads it (``JsonView``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from oma_openai.presets import PRESETS
from oma_openai.provider import _StreamAssembly
from openai.types.chat import ChatCompletionChunk

from oma_core.errors import ProviderError
from oma_core.http import JsonView

_DELTAS = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(st.none(), st.sampled_from(["", "abcd", " ", "é"])),
        "role": st.just("assistant"),
        "refusal": st.one_of(st.none(), st.just("no")),
        "reasoning_content": st.one_of(st.none(), st.just(""), st.just("hmm")),
        "tool_calls": st.one_of(
            st.none(),
            st.just([]),
            st.just([{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]),
        ),
    },
)
_CHOICES = st.fixed_dictionaries(
    {
        "index": st.sampled_from([0, 0, 0, 1]),
        "delta": _DELTAS,
        "finish_reason": st.sampled_from([None, None, "stop", "tool_calls"]),
    }
)
_CHUNKS = st.fixed_dictionaries(
    {
        "id": st.just("c"),
        "object": st.just("chat.completion.chunk"),
        "created": st.just(1),
        "model": st.sampled_from(["gpt-4o", ""]),
        "choices": st.lists(_CHOICES, max_size=2),
    },
    optional={"usage": st.just({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})},
)


def _state(assembly: _StreamAssembly) -> tuple[Any, ...]:
    return tuple(sorted(vars(assembly).items(), key=lambda item: item[0]))


def _outcome(feed: Callable[[Any], list[Any]], chunk: Any) -> object:
    """What feeding one chunk makes: its events, or the error it raises (a stream whose
    pieces do not add up, e.g. one tool call's arguments sent twice, is malformed)."""
    try:
        return feed(chunk)
    except ProviderError as error:
        return (type(error), str(error))


_SECOND_CHOICE = {"index": 1, "delta": {"content": "abcd"}, "finish_reason": None}
_CALL = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
_CALL_CHOICE = {"index": 0, "delta": {"tool_calls": [_CALL]}, "finish_reason": None}
# one tool call's arguments sent twice ("{}{}"): both mappings refuse it alike
_CALL_TWICE = [
    {"model": "m", "choices": [_CALL_CHOICE]},
    {"model": "m", "choices": [{**_CALL_CHOICE, "finish_reason": "stop"}]},
]


@given(chunks=st.lists(_CHUNKS, min_size=1, max_size=6), direct=st.booleans())
@example(chunks=[{"model": "m", "choices": [_SECOND_CHOICE]}], direct=True)  # not the first choice
@example(chunks=[{"model": "m", "choices": [_SECOND_CHOICE]}], direct=False)
@example(chunks=_CALL_TWICE, direct=False)
@example(chunks=_CALL_TWICE, direct=True)
def test_the_common_chunk_shortcut_maps_as_the_full_mapping(
    chunks: list[dict[str, Any]], direct: bool
) -> None:
    preset = next(p for p in PRESETS if p.name == "openai")
    fast, full = _StreamAssembly(preset), _StreamAssembly(preset)
    for data in chunks:
        # as the SDK builds a streamed chunk (without validation), or the direct transport
        read = JsonView(data) if direct else ChatCompletionChunk.construct(**data)
        made = _outcome(fast.feed, read)
        full._model = read.model or full._model
        assert made == _outcome(full._feed_any, read)
        if not isinstance(made, list):
            break  # the stream failed; nothing after it is read
        assert _state(fast) == _state(full)
