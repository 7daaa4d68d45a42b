"""Structured output held to its limits: streamed output is read at a bounded cost (never
re-parsed from the start at every piece), a reply that is not JSON (``NaN``, ``Infinity``) or
nests past the limit gets the corrective turn like any invalid reply, a type's own ``KeyError``
is reported as its error, and corrective turns count toward ``max_turns``.

Work is counted, never timed: the characters parsed (``PartialText.read_chars``) and the
partial events a run hands on."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pydantic
import pytest

from oma_core import Agent, AgentConfig, LLMMessage, TextBlock, ToolUseBlock
from oma_core._output import (
    MAX_OUTPUT_DEPTH,
    OUTPUT_TOOL_NAME,
    PartialText,
    StreamedOutputCall,
    extract_json,
    output_spec,
)
from oma_core.capabilities import Capabilities
from oma_core.errors import MaxTurnsExceededError, OutputValidationError
from oma_core.providers import (
    ProviderEvent,
    ProviderRequest,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from oma_core.testing import ScriptedProvider

#: The characters parsed in all, per character of the whole text, that streaming may cost
#: (a read every eighth of growth is about 9; read at every 4-character piece, 512 KB costs
#: about 65,000).
READ_FACTOR = 10


@attrs.frozen
class Essay:
    title: str
    body: str


def essay_text(size: int) -> str:
    return json.dumps({"title": "On streams", "body": "x" * size})


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class Chunked(ScriptedProvider):
    """A scripted provider that streams a text reply, and a tool call's arguments, in pieces
    of ``size`` characters (the whole call after its pieces)."""

    def __init__(self, *replies: Any, size: int, modes: frozenset[str]) -> None:
        capabilities = attrs.evolve(Capabilities.everything(), output_modes=modes)
        super().__init__(replies, capabilities=capabilities)
        self.size = size

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        response = await self._next(request)
        for block in response.message.content:
            if isinstance(block, TextBlock):
                for piece in pieces(block.text, self.size):
                    yield TextDelta(piece)
            elif isinstance(block, ToolUseBlock):
                for piece in pieces(json.dumps(block.input), self.size):
                    yield ToolCallDelta(0, piece, block.name, block.id)
                yield ToolCall(block)
        yield ResponseComplete(response)


async def streamed(provider: ScriptedProvider, output_type: Any = Essay) -> tuple[list[Any], Any]:
    """The partial events of a streamed run, and its result."""
    config = AgentConfig("a", provider=provider, output_type=output_type)
    partials, result = [], None
    async with Agent(config) as agent, agent.stream("go") as events:
        async for event in events:
            if event.type == "partial":
                partials.append(event.data)
            elif event.type == "done":
                result = event.data
    return partials, result


# -- 13. streamed output is read at a bounded cost ---------------------------------------------


def test_a_long_text_in_small_pieces_is_parsed_a_bounded_number_of_times_over() -> None:
    text = essay_text(512 * 1024)
    reader = PartialText()
    last = None
    for piece in pieces(text, 4):
        value = reader.feed(piece)
        last = value if value is not None else last
    final = reader.flush()
    assert final == json.loads(text)  # the end is always read
    assert last is not None and final["body"].startswith(last["body"])  # read along the way
    assert reader.read_chars <= READ_FACTOR * len(text), reader.read_chars / len(text)
    assert reader.flush() is None  # nothing new: not read again


def test_output_call_pieces_are_parsed_a_bounded_number_of_times_over() -> None:
    spec = output_spec(Essay)
    assert spec is not None
    call = StreamedOutputCall(spec, OUTPUT_TOOL_NAME)
    text = essay_text(512 * 1024)
    shown = [
        call.feed(ToolCallDelta(0, piece, OUTPUT_TOOL_NAME, "c1")) for piece in pieces(text, 4)
    ]
    assert any(value is not None for value in shown)
    assert call.text.read_chars <= READ_FACTOR * len(text)


def test_a_short_text_is_still_read_at_nearly_every_piece() -> None:
    reader = PartialText()
    text = '{"name": "Ada Lovelace", "age": 36}'
    values = [reader.feed(piece) for piece in pieces(text, 3)]
    assert sum(value is not None for value in values) >= len(values) - 2


@pytest.mark.parametrize("mode", ["prompted", "native"])
async def test_a_streamed_text_reply_shows_few_partials_and_the_whole_output(mode: str) -> None:
    text = essay_text(64 * 1024)  # 16,384 pieces: one parse each would be 16,384 partials
    partials, result = await streamed(Chunked(text, size=4, modes=frozenset({mode, "prompted"})))
    assert result.success, result.status
    assert result.structured == Essay("On streams", "x" * 64 * 1024)
    assert partials[-1] == json.loads(text)  # the end is shown
    assert 2 <= len(partials) <= 150, len(partials)


async def test_a_streamed_output_call_shows_few_partials_and_the_whole_output() -> None:
    value = json.loads(essay_text(64 * 1024))
    call = LLMMessage("assistant", (ToolUseBlock("c1", OUTPUT_TOOL_NAME, value),))
    partials, result = await streamed(Chunked(call, size=4, modes=frozenset({"tool"})))
    assert result.success, result.status
    assert partials[-1] == value
    assert 2 <= len(partials) <= 150, len(partials)


# -- 14. a reply that is not JSON, or nests too deeply ------------------------------------------


@attrs.frozen
class Reading:
    v: float


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"])
async def test_a_number_json_has_not_gets_the_corrective_turn(number: str) -> None:
    provider = ScriptedProvider([f'{{"v": {number}}}', '{"v": 1.5}'])
    result = await Agent(AgentConfig("a", provider=provider, output_type=Reading)).run("go")
    assert result.success, result.status
    assert result.structured == Reading(1.5)
    assert len(provider.requests) == 2  # one corrective turn
    correction = provider.requests[1].messages[-1].content[0]
    assert isinstance(correction, TextBlock)
    assert "not a JSON number" in correction.text or "too large for a float" in correction.text


@pytest.mark.parametrize(
    "reply", ["NaN", '{"v": NaN}', 'Here: {"v": Infinity}', '```json\n{"v": -Infinity}\n```']
)
def test_extract_json_refuses_what_json_has_not_wherever_it_sits(reply: str) -> None:
    with pytest.raises(ValueError, match="not a JSON number"):
        extract_json(reply)


@pytest.mark.parametrize("reply", ["1e400", "[1, -1e999]", '{"a": {"b": [2e308]}}'])
def test_extract_json_refuses_a_number_past_a_floats_range(reply: str) -> None:
    with pytest.raises(ValueError, match="too large for a float"):
        extract_json(reply)


async def test_a_number_json_has_not_is_never_the_output() -> None:
    provider = ScriptedProvider(['{"v": NaN}', '{"v": NaN}'])
    result = await Agent(AgentConfig("a", provider=provider, output_type=Reading)).run("go")
    error = result.status.error
    assert isinstance(error, OutputValidationError), error
    assert "NaN" in error.errors[0] and "not a JSON number" in error.errors[0]
    assert result.structured is None


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_value_at_the_depth_limit_parses_and_one_past_it_does_not() -> None:
    assert extract_json(nested(MAX_OUTPUT_DEPTH)) is not None
    with pytest.raises(ValueError, match=f"more than {MAX_OUTPUT_DEPTH} levels"):
        extract_json(nested(MAX_OUTPUT_DEPTH + 1))
    with pytest.raises(ValueError, match=f"more than {MAX_OUTPUT_DEPTH} levels"):
        extract_json(json.dumps({"a": json.loads(nested(MAX_OUTPUT_DEPTH))}))


@pytest.mark.parametrize("depth", [MAX_OUTPUT_DEPTH + 1, 100_000])
async def test_a_reply_nested_too_deeply_gets_the_corrective_turn(depth: int) -> None:
    schema = {"type": "array"}
    provider = ScriptedProvider([nested(depth), "[[1]]"])
    tracemalloc.start()
    try:
        result = await Agent(AgentConfig("a", provider=provider, output_type=schema)).run("go")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.success, result.status  # no RecursionError: the reply was refused
    assert result.structured == [[1]]
    correction = provider.requests[1].messages[-1].content[0]
    assert isinstance(correction, TextBlock)
    assert f"more than {MAX_OUTPUT_DEPTH} levels" in correction.text
    assert peak < 64 * 2**20, peak  # the 200 KB reply, a few times over at most


# -- 14. a type's own KeyError is its error, not a missing field --------------------------------


def no_such_key(instance: Any, attribute: Any, value: str) -> None:
    raise KeyError(f"no code {value}")


@attrs.frozen
class Coded:
    code: str = attrs.field(validator=no_such_key)


class CodedModel(pydantic.BaseModel):
    code: str

    @pydantic.field_validator("code")
    @classmethod
    def known(cls, value: str) -> str:
        raise KeyError(f"no code {value}")


@dataclasses.dataclass
class CodedData:
    code: str

    def __post_init__(self) -> None:
        raise KeyError(f"no code {self.code}")


@pytest.mark.parametrize("output_type", [Coded, CodedModel, CodedData])
async def test_a_validators_key_error_is_reported_as_its_error(output_type: Any) -> None:
    provider = ScriptedProvider(['{"code": "Z9"}', '{"code": "Z9"}'])
    result = await Agent(AgentConfig("a", provider=provider, output_type=output_type)).run("go")
    error = result.status.error
    assert isinstance(error, OutputValidationError), error
    assert "KeyError" in error.errors[0] and "no code Z9" in error.errors[0], error.errors
    assert "missing" not in error.errors[0]


@attrs.frozen
class Inner:
    name: str


@attrs.frozen
class Outer:
    inner: Inner


def test_a_field_that_is_absent_is_still_reported_missing() -> None:
    spec = output_spec(Outer)
    assert spec is not None
    with pytest.raises(ValueError, match=r"\$\.inner is missing the required property 'name'"):
        spec.validate({"inner": {}})


# -- 15. every model call counts toward max_turns ----------------------------------------------


@pytest.mark.parametrize("mode", ["prompted", "tool"])
async def test_corrective_turns_stop_at_max_turns(mode: str) -> None:
    bad: Any = "not JSON"
    if mode == "tool":
        bad = LLMMessage("assistant", (ToolUseBlock("c1", OUTPUT_TOOL_NAME, {"v": "x"}),))
    modes = frozenset({mode, "prompted"})
    provider = ScriptedProvider(
        [bad] * 60, capabilities=attrs.evolve(Capabilities.everything(), output_modes=modes)
    )
    config = AgentConfig(
        "a", provider=provider, output_type=Reading, output_retries=50, max_turns=3
    )
    result = await Agent(config).run("go")
    assert len(provider.requests) == 3  # was 51: the corrective turns ran past max_turns
    error = result.status.error
    assert isinstance(error, MaxTurnsExceededError), error  # as when tool calls use them up
    assert error.max_turns == 3 and result.status.code == "error"
    assert result.structured is None


async def test_a_valid_answer_on_the_last_turn_is_the_output() -> None:
    provider = ScriptedProvider(["no", "still no", '{"v": 2.0}'])
    config = AgentConfig("a", provider=provider, output_type=Reading, output_retries=5, max_turns=3)
    result = await Agent(config).run("go")
    assert result.success and result.structured == Reading(2.0)
    assert len(provider.requests) == 3


async def test_spent_output_retries_still_end_with_the_validation_errors() -> None:
    provider = ScriptedProvider(["no", "still no"])
    config = AgentConfig("a", provider=provider, output_type=Reading, output_retries=1, max_turns=2)
    result = await Agent(config).run("go")
    assert isinstance(result.status.error, OutputValidationError)  # retries ran out first
    assert len(provider.requests) == 2


async def test_tool_rounds_and_corrective_turns_share_max_turns() -> None:
    def lookup() -> str:
        """Look it up."""
        return "1.5"

    provider = ScriptedProvider(
        [LLMMessage("assistant", (ToolUseBlock("t1", "lookup", {}),)), "no", "no", "no"]
    )
    config = AgentConfig(
        "a", provider=provider, tools=[lookup], output_type=Reading, output_retries=9,
        max_turns=3,
    )  # fmt: skip
    result = await Agent(config).run("go")
    assert isinstance(result.status.error, MaxTurnsExceededError)
    assert len(provider.requests) == 3
