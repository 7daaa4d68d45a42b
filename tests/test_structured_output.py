"""Structured output: an output type becomes a JSON schema in the system prompt, the final reply
is parsed and validated into ``RunResult.structured``, an invalid reply gets corrective turns,
and a reply that never validates ends the run with ``OutputValidationError``."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any, TypedDict

import attrs
import pydantic
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oma_core import Agent, AgentConfig, OutputValidationError, RunSettings
from oma_core._output import extract_json, output_spec, partial_json
from oma_core.capabilities import Capabilities
from oma_core.errors import OutputTypeError
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.testing import ScriptedProvider


class Invoice(pydantic.BaseModel):
    number: str
    total: float


@attrs.frozen
class Person:
    name: str
    age: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


async def run(output_type: Any, *replies: str, retries: int = 1) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider(replies)
    config = AgentConfig("a", provider=provider, output_type=output_type, output_retries=retries)
    return await Agent(config).run("go"), provider


# -- each kind of output type ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (Invoice, '{"number": "A-1", "total": 9.5}', Invoice(number="A-1", total=9.5)),
        (Person, '{"name": "Ada", "age": 36}', Person("Ada", 36)),
        (Point, '{"x": 1, "y": 2}', Point(1, 2)),
        (Movie, '{"title": "Alien", "year": 1979}', {"title": "Alien", "year": 1979}),
        (list[Person], '[{"name": "Ada", "age": 36}]', [Person("Ada", 36)]),
        (int, "42", 42),
        (PERSON_SCHEMA, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
    ],
    ids=["pydantic", "attrs", "dataclass", "typeddict", "list", "scalar", "schema-dict"],
)
async def test_a_valid_reply_becomes_the_structured_output(
    output_type: Any, reply: str, expected: Any
) -> None:
    result, provider = await run(output_type, reply)
    assert result.success, result.status
    assert result.structured == expected
    assert type(result.structured) is type(expected)
    assert result.output == reply  # the raw text stays
    assert len(provider.requests) == 1


async def test_the_schema_goes_into_the_system_prompt_after_the_agents_own() -> None:
    provider = ScriptedProvider(['{"name": "Ada", "age": 36}'])
    config = AgentConfig("a", provider=provider, system_prompt="Be brief.", output_type=Person)
    await Agent(config).run("go")
    system = provider.requests[0].system_prompt or ""
    assert system.startswith("Be brief.\n\n")
    schema = json.loads(system.rsplit("JSON Schema: ", 1)[1])
    assert schema["required"] == ["name", "age"]


async def test_a_run_without_output_type_has_no_structured_output_and_no_instructions() -> None:
    provider = ScriptedProvider(['{"a": 1}'])
    result = await Agent(AgentConfig("a", provider=provider)).run("go")
    assert result.structured is None
    assert provider.requests[0].system_prompt is None


async def test_a_fenced_json_block_amid_prose_is_the_output() -> None:
    result, _ = await run(Person, 'Here it is:\n```json\n{"name": "Ada", "age": 36}\n```\nDone.')
    assert result.structured == Person("Ada", 36)


async def test_the_run_settings_output_type_overrides_the_agents() -> None:
    provider = ScriptedProvider(['{"x": 1, "y": 2}'])
    agent = Agent(AgentConfig("a", provider=provider, output_type=Person))
    result = await agent.run("go", settings=RunSettings(output_type=Point))
    assert result.structured == Point(1, 2)


# -- repair ------------------------------------------------------------------------------------


async def test_an_invalid_reply_gets_exactly_one_corrective_turn_carrying_the_errors() -> None:
    result, provider = await run(
        Person, '{"name": "Ada", "age": "old"}', '{"name": "Ada", "age": 3}'
    )
    assert result.success
    assert result.structured == Person("Ada", 3)
    assert len(provider.requests) == 2
    correction = provider.text_of(1)
    assert "$.age must be integer, got string" in correction
    # the failed reply and the correction are in the conversation the model sees
    second = provider.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "user"]


async def test_usage_counts_every_attempt() -> None:
    one, _ = await run(Person, '{"name": "Ada", "age": 3}')
    two, _ = await run(Person, "not json", '{"name": "Ada", "age": 3}')
    assert two.usage.output_tokens > one.usage.output_tokens
    assert two.usage.input_tokens > one.usage.input_tokens


async def test_still_invalid_after_the_retries_fails_with_output_validation_error() -> None:
    result, provider = await run(Person, "no", "still no", '{"name": 1, "age": 2}', retries=2)
    assert not result.success
    error = result.status.error
    assert isinstance(error, OutputValidationError)
    assert error.text == '{"name": 1, "age": 2}'
    assert error.errors == ("$.name must be string, got integer",)
    assert len(provider.requests) == 3
    assert result.structured is None


async def test_no_retries_fails_at_the_first_invalid_reply() -> None:
    result, provider = await run(Person, "no", retries=0)
    assert isinstance(result.status.error, OutputValidationError)
    assert len(provider.requests) == 1


async def test_the_error_message_names_the_error_never_the_prompt() -> None:
    provider = ScriptedProvider(["nope", "nope"])
    agent = Agent(AgentConfig("a", provider=provider, output_type=Person))
    result = await agent.run("SECRET PROMPT TEXT")
    assert "SECRET" not in str(result.status.error)
    assert "holds no JSON value" in str(result.status.error)


def test_output_validation_error_pickles_with_its_fields() -> None:
    error = OutputValidationError(["$.a must be string, got integer"], '{"a": 1}')
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.errors, copy.text, str(copy)) == (error.errors, error.text, str(error))


class _CutProvider:
    """Answers with valid JSON, but says the reply was cut (``stop_reason``)."""

    capabilities = Capabilities.everything()

    def __init__(self, stop_reason: str) -> None:
        self.stop_reason = stop_reason
        self.calls = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.calls += 1
        message = LLMMessage("assistant", (TextBlock('{"name": "Ada", "age": 3}'),))
        return ProviderResponse(message, Usage(5, 5), self.stop_reason)


@pytest.mark.parametrize(
    "reason", ["max_tokens", "refusal", "length", "model_length", "content_filter"]
)
async def test_a_cut_or_refused_reply_is_never_parsed_as_output(reason: str) -> None:
    provider = _CutProvider(reason)
    result = await Agent(AgentConfig("a", provider=provider, output_type=Person)).run("go")
    assert not result.success
    assert isinstance(result.status.error, OutputValidationError)
    assert reason in result.status.error.errors[0]
    assert result.structured is None
    assert provider.calls == 1  # asking again would be cut the same way


# -- refused output types ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output_type", "named"),
    [
        (lambda text: text, "<lambda>"),
        (dict[str, Any], "dict[str, typing.Any]"),
        (list[Any], "list[typing.Any]"),
        (object, "object"),
        ({"type": "integer", "minimum": 0}, "JSON Schema dict"),
        ({"type": "whole number"}, "JSON Schema dict"),
        ({"properties": []}, "JSON Schema dict"),
    ],
    ids=["lambda", "open-dict", "list-of-any", "object", "minimum", "bad-type", "bad-properties"],
)
def test_an_output_type_without_a_json_schema_is_refused_when_the_config_is_built(
    output_type: Any, named: str
) -> None:
    with pytest.raises(OutputTypeError) as info:
        AgentConfig("a", output_type=output_type)
    assert info.value.output_type == named
    assert named in str(info.value)
    assert isinstance(info.value, TypeError)


def test_a_run_settings_output_type_is_checked_when_built() -> None:
    with pytest.raises(OutputTypeError):
        RunSettings(output_type=dict[str, Any])


def test_output_retries_must_be_a_count() -> None:
    with pytest.raises(ValueError, match="output_retries"):
        AgentConfig("a", output_retries=-1)


# -- finding the JSON --------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
_containers = st.dictionaries(st.text(max_size=5), _json, max_size=3) | st.lists(_json, max_size=3)


@given(_json)
def test_bare_json_is_extracted_as_is(value: Any) -> None:
    assert extract_json(json.dumps(value)) == value


@given(
    _containers, st.text(alphabet="abc .:\n", max_size=20), st.text(alphabet="abc .\n", max_size=20)
)
def test_a_fenced_block_is_extracted_whatever_prose_surrounds_it(
    value: Any, before: str, after: str
) -> None:
    text = f"{before}\n```json\n{json.dumps(value)}\n```\n{after}"
    assert extract_json(text) == value


@given(
    _containers, st.text(alphabet="abc .:\n", max_size=20), st.text(alphabet="abc .\n", max_size=20)
)
def test_an_object_or_list_amid_prose_is_extracted(value: Any, before: str, after: str) -> None:
    assert extract_json(f"{before}{json.dumps(value)}{after}") == value


@given(st.text(alphabet="abc .:\n", max_size=30))
def test_text_without_json_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(ValueError, match="JSON"):
        extract_json(text)


@given(_containers)
@example({"```": None})  # a fence's backticks inside a string are JSON, not a fence
def test_every_prefix_of_a_json_value_parses_partially(value: Any) -> None:
    text = json.dumps(value)
    for end in range(1, len(text) + 1):
        partial_json(text[:end])  # never raises
    assert partial_json(text) == value


def test_a_partial_object_keeps_an_unfinished_string() -> None:
    assert partial_json('```json\n{"name": "Ad') == {"name": "Ad"}


def test_an_output_spec_is_made_once_per_type() -> None:
    assert output_spec(Person) is output_spec(Person)


# -- streaming ---------------------------------------------------------------------------------


async def test_a_stream_yields_partial_objects_then_the_validated_output() -> None:
    reply = '{"name": "Ada Lovelace", "age": 36}'
    provider = ScriptedProvider([reply])
    agent = Agent(AgentConfig("a", provider=provider, output_type=Person))
    async with agent.stream("go") as events:
        seen = [event async for event in events]
    partials = [event.data for event in seen if event.type == "partial"]
    assert partials, [event.type for event in seen]
    assert partials[-1] == {"name": "Ada Lovelace", "age": 36}
    assert all(isinstance(p, dict) for p in partials)
    assert len(partials) == len({json.dumps(p) for p in partials})  # each one is new
    done = seen[-1]
    assert done.type == "done"
    assert done.data.structured == Person("Ada Lovelace", 36)


async def test_a_stream_without_output_type_yields_no_partial_events() -> None:
    provider = ScriptedProvider(['{"name": "Ada", "age": 36}'])
    async with Agent(AgentConfig("a", provider=provider)).stream("go") as events:
        kinds = [event.type async for event in events]
    assert "partial" not in kinds


async def test_a_streamed_invalid_reply_is_repaired_like_a_run() -> None:
    provider = ScriptedProvider(['{"name": "Ada"}', '{"name": "Ada", "age": 36}'])
    agent = Agent(AgentConfig("a", provider=provider, output_type=Person))
    async with agent.stream("go") as events:
        seen = [event async for event in events]
    assert seen[-1].data.structured == Person("Ada", 36)
    assert len(provider.requests) == 2


# -- teams -------------------------------------------------------------------------------------


async def test_a_task_with_an_output_type_hands_its_validated_output_on_as_json() -> None:
    from oma_core import OpenMultiAgent, TaskSpec, Team

    worker = ScriptedProvider(['Sure! {"name": "Ada", "age": 36} Anything else?', "a poem"])
    team = Team("t", [AgentConfig("w", provider=worker)])
    tasks = [
        TaskSpec("find", "Find the person.", output_type=Person),
        TaskSpec("write", "Write about them.", depends_on=["find"]),
    ]
    result = await OpenMultiAgent().run_tasks(team, tasks)
    assert result.success
    assert result.tasks["find"].structured == Person("Ada", 36)
    assert result.tasks["write"].structured is None
    assert "JSON Schema" in (worker.requests[0].system_prompt or "")
    assert worker.requests[1].system_prompt is None  # the dependent task has no output type
    prompt = worker.text_of(1)
    assert '{"name": "Ada", "age": 36}' in prompt
    assert "Anything else?" not in prompt  # the JSON, not the reply's prose


def test_a_task_output_type_is_checked_when_the_task_is_built() -> None:
    from oma_core import TaskSpec

    with pytest.raises(OutputTypeError):
        TaskSpec("t", "d", output_type=dict[str, Any])


# -- what a failed run hands out, and what crosses processes -----------------------------------


async def test_a_key_in_an_invalid_reply_is_scrubbed_from_the_errors_handed_out() -> None:
    key = "sk-proj-Abc123Def456Ghi789Jkl0"
    reply = json.dumps({"name": "Ada", "age": key})
    result, _ = await run(enum_age_schema(), reply, reply)
    error = result.status.error
    assert isinstance(error, OutputValidationError)
    assert error.errors  # kept on the detached error
    assert all(key not in line for line in error.errors)
    assert key not in error.text and key not in str(error)


def enum_age_schema() -> dict[str, Any]:
    """A schema whose enum error quotes the value the model gave."""
    return {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"enum": ["young", "old"]}},
        "required": ["name", "age"],
    }


def test_a_config_with_an_output_type_pickles_for_another_process() -> None:
    config = AgentConfig("a", output_type=list[Person], output_retries=2)
    copy = pickle.loads(pickle.dumps(config))
    assert (copy.output_type, copy.output_retries) == (list[Person], 2)


async def test_prompt_keeps_the_corrective_turn_in_the_history() -> None:
    provider = ScriptedProvider(["nope", '{"name": "Ada", "age": 36}'])
    agent = Agent(AgentConfig("a", provider=provider, output_type=Person))
    result = await agent.prompt("Who?")
    assert result.structured == Person("Ada", 36)
    roles = [message.role for message in agent.get_history()]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_the_request_a_run_would_send_carries_the_instructions() -> None:
    agent = Agent(AgentConfig("a", provider=ScriptedProvider(), output_type=Person))
    system = agent.build_request("go").system_prompt or ""
    assert "JSON Schema:" in system
    assert (
        Agent(AgentConfig("a", provider=ScriptedProvider())).build_request("go").system_prompt
        is None
    )


# -- external agent backends: prompted, checked once -------------------------------------------


class _JsonBackend:
    """An in-process stand-in for a CLI agent that answers with a fixed text."""

    kind = display_name = "json"

    def __init__(self, answer: str, requests: list[Any]) -> None:
        self.answer = answer
        self.requests = requests

    async def run(self, request: Any) -> Any:
        from oma_core.backends import BackendResult

        self.requests.append(request)
        yield BackendResult(self.answer)

    async def aclose(self) -> None:
        return None


def _backend_agent(answer: str, requests: list[Any]) -> Agent[Person]:
    from oma_core import PluginHost, hookimpl
    from oma_core.capabilities import BackendSpec

    class Plugin:
        @hookimpl
        def oma_register_backends(self) -> list[BackendSpec]:
            return [
                BackendSpec("json", "JSON CLI", lambda _options: _JsonBackend(answer, requests))
            ]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="json-backend")
    config = AgentConfig("cli", backend={"kind": "json"}, output_type=Person)
    return Agent(config, plugins=host)


async def test_a_backend_gets_the_instructions_and_its_answer_is_validated() -> None:
    requests: list[Any] = []
    result = await _backend_agent('{"name": "Ada", "age": 36}', requests).run("Who?")
    assert result.structured == Person("Ada", 36)
    assert "JSON Schema:" in requests[0].system_prompt


async def test_an_invalid_backend_answer_fails_without_a_second_turn() -> None:
    requests: list[Any] = []
    result = await _backend_agent("no JSON here", requests).run("Who?")
    assert isinstance(result.status.error, OutputValidationError)
    assert len(requests) == 1


async def test_a_missing_field_is_named_as_a_property() -> None:
    _, provider = await run(Person, '{"name": "Ada"}', '{"name": "Ada", "age": 1}')
    assert "$ is missing the required property 'age'" in provider.text_of(1)


def test_capabilities_declare_prompted_output_by_default_and_refuse_unknown_modes() -> None:
    assert Capabilities.everything().output_modes == frozenset({"prompted"})
    declared = Capabilities((), output_modes=["native", "prompted"])
    assert declared.output_modes == frozenset({"native", "prompted"})
    with pytest.raises(ValueError, match="output_modes"):
        Capabilities((), output_modes={"json"})
