"""Structured output in the three modes: which one a run takes (the best the provider declares,
or ``output_mode``), what the request carries in each (``ProviderRequest.output`` for native and
tool, instructions for prompted), where the output is read from (the reply's text, or the
forced tool call, which is never run), and the corrective turn of each."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    OutputValidationError,
    RunSettings,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from oma_core._output import OUTPUT_TOOL_NAME, choose_mode, output_spec
from oma_core.capabilities import Capabilities
from oma_core.errors import OutputTypeError
from oma_core.providers import ProviderEvent, ProviderRequest, ToolCall, ToolCallDelta
from oma_core.testing import ScriptedProvider


@attrs.frozen
class Person:
    name: str
    age: int
    nick: str = ""


ALL_MODES = frozenset({"native", "tool", "prompted"})


def provider(*replies: Any, modes: frozenset[str] = ALL_MODES) -> ScriptedProvider:
    capabilities = attrs.evolve(Capabilities.everything(), output_modes=modes)
    return ScriptedProvider(replies, capabilities=capabilities)


def output_call(arguments: dict[str, Any], call_id: str = "c1") -> LLMMessage:
    return LLMMessage("assistant", (ToolUseBlock(call_id, OUTPUT_TOOL_NAME, arguments),))


def agent(scripted: ScriptedProvider, output_type: Any = Person, **extra: Any) -> Agent[Any]:
    return Agent(AgentConfig("a", provider=scripted, output_type=output_type, **extra))


# -- choosing the mode -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ({"native", "tool", "prompted"}, "native"),
        ({"tool", "prompted"}, "tool"),
        ({"prompted"}, "prompted"),
    ],
)
def test_the_best_declared_mode_is_taken(declared: set[str], expected: str) -> None:
    assert choose_mode(frozenset(declared), None, "P") == expected


def test_an_output_mode_the_provider_lacks_is_refused_naming_the_modes_it_has() -> None:
    with pytest.raises(OutputTypeError, match="declares output modes prompted, tool"):
        choose_mode(frozenset({"tool", "prompted"}), "native", "P")


async def test_a_run_asking_for_a_mode_the_provider_lacks_fails_before_any_request() -> None:
    scripted = provider('{"name": "Ada", "age": 3}', modes=frozenset({"prompted"}))
    result = await agent(scripted, output_mode="tool").run("go")
    assert isinstance(result.status.error, OutputTypeError)
    assert scripted.requests == []


async def test_output_mode_in_run_settings_wins_over_the_config() -> None:
    scripted = provider('{"name": "Ada", "age": 3}')
    result = await agent(scripted, output_mode="tool").run(
        "go", settings=RunSettings(output_mode="prompted")
    )
    assert result.structured == Person("Ada", 3)
    assert scripted.requests[0].output is None
    assert "JSON Schema" in (scripted.requests[0].system_prompt or "")


def test_an_unknown_output_mode_is_refused_when_the_config_is_built() -> None:
    with pytest.raises(ValueError, match="output_mode must be"):
        AgentConfig("a", output_mode="json")  # type: ignore[arg-type]


# -- native mode -------------------------------------------------------------------------------


async def test_native_mode_sends_the_schema_as_output_and_no_instructions() -> None:
    scripted = provider('{"name": "Ada", "age": 36, "nick": "A"}')
    result = await agent(scripted).run("go")
    request = scripted.requests[0]
    assert result.structured == Person("Ada", 36, "A")
    assert request.output is not None
    assert (request.output.mode, request.output.name) == ("native", "Person")
    assert request.output.schema["properties"]["age"] == {"type": "integer"}
    assert request.system_prompt is None


async def test_native_mode_reads_null_for_an_optional_property_as_absent() -> None:
    scripted = provider('{"name": "Ada", "age": 36, "nick": null}')
    result = await agent(scripted).run("go")
    assert result.structured == Person("Ada", 36, "")


async def test_native_mode_wraps_a_list_output_in_an_object_and_unwraps_the_reply() -> None:
    scripted = provider('{"response": [{"name": "Ada", "age": 36}]}')
    result = await agent(scripted, list[Person]).run("go")
    request = scripted.requests[0]
    assert request.output is not None
    assert request.output.schema["required"] == ["response"]
    assert result.structured == [Person("Ada", 36)]


async def test_native_mode_corrects_an_invalid_reply_with_a_user_turn() -> None:
    scripted = provider('{"name": "Ada"}', '{"name": "Ada", "age": 36}')
    result = await agent(scripted).run("go")
    assert result.structured == Person("Ada", 36)
    assert "age" in scripted.text_of(1)
    assert scripted.requests[1].output == scripted.requests[0].output


async def test_native_mode_counts_the_usage_of_every_attempt() -> None:
    scripted = provider('{"name": "Ada"}', '{"name": "Ada", "age": 36}')
    result = await agent(scripted).run("go")
    first = await agent(provider('{"name": "Ada", "age": 36}')).run("go")
    assert result.usage.output_tokens > first.usage.output_tokens


async def test_native_mode_streams_partial_objects_unwrapped() -> None:
    scripted = provider('{"response": [{"name": "Ada", "age": 36}, {"name": "Bo", "age": 2}]}')
    partials = []
    async for event in agent(scripted, list[Person]).stream("go"):
        if event.type == "partial":
            partials.append(event.data)
        if event.type == "done":
            result = event.data
    assert partials[-1] == [{"name": "Ada", "age": 36}, {"name": "Bo", "age": 2}]
    assert all(isinstance(p, list) for p in partials if p is not None)
    assert result.structured == [Person("Ada", 36), Person("Bo", 2)]


# -- tool mode ---------------------------------------------------------------------------------


TOOL_ONLY = frozenset({"tool", "prompted"})


async def test_tool_mode_reads_the_forced_call_and_never_runs_it() -> None:
    scripted = provider(output_call({"name": "Ada", "age": 36}), modes=TOOL_ONLY)
    result = await agent(scripted).run("go")
    request = scripted.requests[0]
    assert request.output is not None
    assert (request.output.mode, request.output.name) == ("tool", OUTPUT_TOOL_NAME)
    assert request.tools == ()  # the provider adds the output tool itself
    assert result.success and result.structured == Person("Ada", 36)
    assert json.loads(result.output) == {"name": "Ada", "age": 36}  # the raw arguments
    assert len(scripted.requests) == 1


async def test_tool_mode_hands_back_the_output_call_as_text_so_history_has_no_open_call() -> None:
    scripted = provider(output_call({"name": "Ada", "age": 36}), "fine", modes=TOOL_ONLY)
    bot = agent(scripted)
    result = await bot.prompt("go")
    [turn] = result.messages
    assert [block.type for block in turn.content] == ["text"]
    assert isinstance(turn.content[0], TextBlock)
    assert json.loads(turn.content[0].text)["name"] == "Ada"


async def test_tool_mode_answers_an_invalid_call_with_an_error_result_carrying_the_errors() -> None:
    scripted = provider(
        output_call({"name": "Ada", "age": "old"}, "c1"),
        output_call({"name": "Ada", "age": 36}, "c2"),
        modes=TOOL_ONLY,
    )
    result = await agent(scripted).run("go")
    assert result.structured == Person("Ada", 36)
    correction = scripted.requests[1].messages[-1]
    [answer] = correction.content
    assert isinstance(answer, ToolResultBlock)
    assert answer.tool_use_id == "c1" and answer.is_error
    assert "$.age must be integer" in str(answer.content)


async def test_tool_mode_gives_up_after_output_retries_with_the_arguments_as_text() -> None:
    scripted = provider(output_call({"name": 1, "age": 2}), modes=TOOL_ONLY)
    result = await agent(scripted, output_retries=0).run("go")
    error = result.status.error
    assert isinstance(error, OutputValidationError)
    assert json.loads(error.text) == {"name": 1, "age": 2}


async def test_tool_mode_runs_the_agents_own_tools_before_the_output_call() -> None:
    calls: list[str] = []

    def lookup(who: str) -> str:
        """Look someone up."""
        calls.append(who)
        return "36"

    own = LLMMessage("assistant", (ToolUseBlock("t1", "lookup", {"who": "Ada"}),))
    scripted = provider(own, output_call({"name": "Ada", "age": 36}), modes=TOOL_ONLY)
    result = await agent(scripted, tools=[lookup]).run("go")
    assert calls == ["Ada"]
    assert result.structured == Person("Ada", 36)


async def test_tool_mode_streams_the_output_as_a_partial_not_as_a_tool_use() -> None:
    scripted = provider(output_call({"name": "Ada", "age": 36}), modes=TOOL_ONLY)
    kinds = []
    async for event in agent(scripted).stream("go"):
        kinds.append((event.type, event.data if event.type == "partial" else None))
    # a provider that sends no argument pieces: one partial, when the call is whole
    assert [data for kind, data in kinds if kind == "partial"] == [{"name": "Ada", "age": 36}]
    assert all(kind != "tool_use" for kind, _ in kinds)


# -- tool mode, streamed argument pieces -------------------------------------------------------


class Pieces(ScriptedProvider):
    """A scripted provider that streams each tool call's arguments as ``ToolCallDelta``
    pieces before its ``ToolCall``, as services that stream arguments do: the JSON of the
    call's input cut every ``size`` characters, or the pieces ``split`` gives for a call."""

    def __init__(
        self,
        *replies: Any,
        size: int = 4,
        split: Callable[[ToolUseBlock], list[str]] | None = None,
    ) -> None:
        capabilities = attrs.evolve(Capabilities.everything(), output_modes=TOOL_ONLY)
        super().__init__(replies, capabilities=capabilities)
        self.split = split or (lambda block: _cut(json.dumps(block.input), size))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        index = 0
        async with aclosing(super().stream(request)) as events:
            async for event in events:
                if isinstance(event, ToolCall):
                    block = event.block
                    for piece in self.split(block):
                        yield ToolCallDelta(index, piece, block.name, block.id)
                    index += 1
                yield event


def _cut(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def consistent(partial: Any, final: Any) -> bool:
    """Whether ``partial`` is what a prefix of ``final``'s JSON can show: objects with some of
    its keys, lists with its first items, strings and numbers cut short."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final and consistent(value, final[key]) for key, value in partial.items()
        )
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(consistent(a, b) for a, b in zip(partial, final, strict=False))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    if isinstance(partial, bool) or partial is None:
        return partial is final
    return type(partial) is type(final) and str(final).startswith(str(partial))


async def streamed(bot: Agent[Any]) -> tuple[list[Any], Any]:
    """The partials of a streamed run, and its result."""
    partials, result = [], None
    async with bot.stream("go") as events:
        async for event in events:
            assert event.type not in ("text", "tool_use"), event
            if event.type == "partial":
                partials.append(event.data)
            elif event.type == "done":
                result = event.data
    return partials, result


async def test_tool_mode_streams_partials_as_the_output_calls_arguments_arrive() -> None:
    final = {"name": "Ada Lovelace", "age": 36, "nick": "Countess"}
    partials, result = await streamed(agent(Pieces(output_call(final), size=5)))
    assert len(partials) >= 5  # one per piece that changed the value, not one at the end
    assert partials[-1] == final
    assert all(consistent(partial, final) for partial in partials), partials
    assert len(partials) == len({json.dumps(p) for p in partials})  # each one is new
    assert result.structured == Person("Ada Lovelace", 36, "Countess")  # strictly validated


async def test_tool_mode_streams_a_wrapped_output_unwrapped_as_it_arrives() -> None:
    final = [{"name": "Ada", "age": 36, "nick": ""}, {"name": "Bo", "age": 2, "nick": ""}]
    scripted = Pieces(output_call({"response": final}), size=6)
    partials, result = await streamed(agent(scripted, list[Person]))
    assert len(partials) >= 3 and partials[-1] == final
    assert all(isinstance(p, list) and consistent(p, final) for p in partials), partials
    assert result.structured == [Person("Ada", 36), Person("Bo", 2)]


@settings(deadline=None, max_examples=60)  # each example runs an agent: no time limit per run
@given(
    name=st.text(max_size=12),
    age=st.integers(min_value=0, max_value=10**6),
    size=st.integers(min_value=1, max_value=9),
)
def test_every_partial_of_streamed_arguments_is_a_prefix_of_the_output(
    name: str, age: int, size: int
) -> None:
    final = {"name": name, "age": age, "nick": ""}
    partials, result = asyncio.run(streamed(agent(Pieces(output_call(final), size=size))))
    assert len(partials) >= 2 and partials[-1] == final  # shown before the call was whole
    assert all(consistent(partial, final) for partial in partials), partials
    assert result.structured == Person(name, age)


async def test_argument_pieces_that_do_not_parse_never_fail_a_run_whose_call_is_valid() -> None:
    final = {"name": "Ada", "age": 36}
    garbage = ["}{", "][nonsense", '{"name": ', "\\ud800", "", '"]]]']
    scripted = Pieces(output_call(final), split=lambda block: garbage)
    partials, result = await streamed(agent(scripted))
    assert result.success and result.structured == Person("Ada", 36)
    assert partials[-1] == final  # the whole call has the last word


async def test_argument_pieces_never_change_the_output_the_whole_call_gives() -> None:
    pieces = ['{"name": "Eve", ', '"age": 99}']  # say something else than the call
    scripted = Pieces(output_call({"name": "Ada", "age": 36}), split=lambda block: pieces)
    partials, result = await streamed(agent(scripted))
    assert partials == [{"name": "Eve"}, {"name": "Eve", "age": 99}, {"name": "Ada", "age": 36}]
    assert result.structured == Person("Ada", 36)
    assert json.loads(result.output) == {"name": "Ada", "age": 36}


async def test_only_the_output_calls_pieces_show_as_partials() -> None:
    def lookup(who: str) -> str:
        """Look someone up."""
        return "36"

    own = LLMMessage("assistant", (ToolUseBlock("t1", "lookup", {"who": "Ada Lovelace"}),))
    scripted = Pieces(own, output_call({"name": "Ada", "age": 36}), size=3)
    shown = []
    async for event in agent(scripted, tools=[lookup]).stream("go"):
        if event.type in ("partial", "tool_use"):
            shown.append(event.type)
    assert shown[0] == "tool_use"  # the own tool's call: whole, once, never a partial
    assert shown.count("tool_use") == 1
    assert shown.count("partial") >= 3


async def test_a_run_not_streamed_is_the_same_with_argument_pieces() -> None:
    final = {"name": "Ada", "age": 36}
    result = await agent(Pieces(output_call(final), size=2)).run("go")
    assert result.success and result.structured == Person("Ada", 36)


async def test_tool_mode_never_parses_a_reply_cut_at_max_tokens() -> None:
    cut = output_call({"name": "Ada", "age": 36})

    class Cut(ScriptedProvider):
        def _respond(self, request: Any, message: LLMMessage) -> Any:
            return attrs.evolve(super()._respond(request, message), stop_reason="max_tokens")

    capabilities = attrs.evolve(Capabilities.everything(), output_modes=TOOL_ONLY)
    result = await agent(Cut([cut], capabilities=capabilities)).run("go")
    assert isinstance(result.status.error, OutputValidationError)
    assert result.structured is None


# -- what a request carries --------------------------------------------------------------------


def test_build_request_shows_the_output_in_the_mode_the_run_would_take() -> None:
    request = agent(provider()).build_request("go")
    assert request.output is not None and request.output.mode == "native"
    spec = output_spec(Person)
    assert spec is not None
    assert request.output == spec.request("native")
