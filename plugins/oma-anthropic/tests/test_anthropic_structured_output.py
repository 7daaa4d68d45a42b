"""Structured output through the Anthropic plugin: native mode sends ``output_config.format``
(``json_schema``, every object closed), byte for byte what ``render`` shows on all three
transports; tool mode forces the output tool (the way for models without native); what the API
cannot take is refused locally (an open dict, a schema past the documented complexity limits,
at the limit sent and one past it refused); a refusal or a ``max_tokens`` stop is never
parsed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pydantic
import pytest
from click.testing import CliRunner
from fake_anthropic import FakeAnthropic
from hypothesis import given, settings
from hypothesis import strategies as st
from oma_anthropic.output import output_schema

from oma_core import Agent, AgentConfig, OutputValidationError
from oma_core.cli import cli
from oma_core.errors import OutputTypeError


@attrs.frozen
class Invoice:
    number: str
    total: float


@attrs.frozen
class Line:
    item: str
    qty: int = 1


INVOICE_SCHEMA = {
    "type": "object",
    "properties": {"number": {"type": "string"}, "total": {"type": "number"}},
    "required": ["number", "total"],
    "additionalProperties": False,
}


def agent_for(
    server: FakeAnthropic,
    output_type: Any = Invoice,
    model: str = "claude-sonnet-4-6",
    **extra: Any,
) -> Agent[Any]:
    config = AgentConfig(
        "t",
        provider="anthropic",
        model=model,
        base_url=server.url,
        api_key="test-key",
        output_type=output_type,
        **extra,
    )
    return Agent(config)


def tool_use(arguments: dict[str, Any], call_id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "final_result", "input": arguments}


# -- native mode -------------------------------------------------------------------------------


async def test_native_mode_sends_output_config_format_with_the_schema(
    server: FakeAnthropic,
) -> None:
    server.reply_text('{"number": "INV-7", "total": 12.5}')
    async with agent_for(server) as agent:
        result = await agent.run("Extract the invoice.")
    assert result.structured == Invoice("INV-7", 12.5)
    body = server.requests[0].json
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": INVOICE_SCHEMA}}
    assert "system" not in body and "tool_choice" not in body
    assert "anthropic-beta" not in server.requests[0].headers  # generally available


async def test_every_transport_sends_the_same_bytes_render_shows(
    server: FakeAnthropic, transport: str
) -> None:
    server.reply_text('{"number": "A", "total": 1}')
    options = {"transport": transport}
    async with agent_for(server, provider_options=options) as agent:
        shown = agent.provider().render(agent.build_request("Extract."))
        result = await agent.run("Extract.")
    assert result.structured == Invoice("A", 1.0)
    wire = json.dumps(shown, separators=(",", ":"), ensure_ascii=False).encode()
    assert server.requests[0].body == wire
    assert shown["output_config"]["format"]["schema"] == INVOICE_SCHEMA


async def test_an_effort_in_output_config_is_kept_beside_the_format(
    server: FakeAnthropic,
) -> None:
    server.reply_text('{"number": "A", "total": 1}')
    options = {"extra_body": {"output_config": {"effort": "low"}}}
    async with agent_for(server, provider_options=options) as agent:
        await agent.run("Extract.")
    config = server.requests[0].json["output_config"]
    assert config["effort"] == "low" and config["format"]["type"] == "json_schema"


async def test_unsupported_constraints_move_into_the_description(server: FakeAnthropic) -> None:
    class Person(pydantic.BaseModel):
        age: int = pydantic.Field(ge=0)

    server.reply_text('{"age": 3}')
    async with agent_for(server, Person) as agent:
        result = await agent.run("Age?")
    assert result.structured == Person(age=3)
    sent = server.requests[0].json["output_config"]["format"]["schema"]
    assert sent["properties"]["age"]["description"] == "{minimum: 0}"
    assert "minimum" not in sent["properties"]["age"]


async def test_an_open_dict_is_refused_locally(server: FakeAnthropic) -> None:
    @attrs.frozen
    class Tally:
        counts: dict[str, int]

    async with agent_for(server, Tally) as agent:
        result = await agent.run("Count.")
    assert isinstance(result.status.error, OutputTypeError)
    assert "$.counts" in str(result.status.error)
    assert server.requests == []


async def test_a_model_without_native_output_is_refused_with_the_way_out(
    server: FakeAnthropic,
) -> None:
    async with agent_for(server, model="claude-3-5-haiku-latest") as agent:
        result = await agent.run("Extract.")
    error = result.status.error
    assert isinstance(error, OutputTypeError)
    assert 'output_mode="tool"' in str(error)
    assert server.requests == []


async def test_a_refusal_is_never_parsed(server: FakeAnthropic) -> None:
    server.reply_text("I can't help with that.", stop_reason="refusal")
    async with agent_for(server) as agent:
        result = await agent.run("Extract.")
    assert isinstance(result.status.error, OutputValidationError)
    assert len(server.requests) == 1


async def test_a_reply_cut_at_max_tokens_is_never_parsed(server: FakeAnthropic) -> None:
    server.reply_text('{"number": "A", "total": 1}', stop_reason="max_tokens")
    async with agent_for(server) as agent:
        result = await agent.run("Extract.")
    assert isinstance(result.status.error, OutputValidationError)
    assert result.structured is None


async def test_native_mode_streams_partial_objects(server: FakeAnthropic) -> None:
    server.reply_text('{"number": "INV-7", "total": 12.5}')
    partials = []
    async with agent_for(server) as agent:
        async for event in agent.stream("Extract."):
            if event.type == "partial":
                partials.append(event.data)
            elif event.type == "done":
                result = event.data
    assert len(partials) > 1
    assert partials[-1] == {"number": "INV-7", "total": 12.5}
    assert result.structured == Invoice("INV-7", 12.5)


# -- tool mode ---------------------------------------------------------------------------------


async def test_tool_mode_forces_the_output_tool_and_reads_its_input(
    server: FakeAnthropic, transport: str
) -> None:
    server.reply(tool_use({"number": "A", "total": 2}), stop_reason="tool_use")
    options = {"transport": transport}
    async with agent_for(
        server, model="claude-3-5-haiku-latest", output_mode="tool", provider_options=options
    ) as agent:
        shown = agent.provider().render(agent.build_request("Extract."))
        result = await agent.run("Extract.")
    assert result.structured == Invoice("A", 2.0)
    body = server.requests[0].json
    assert body["tool_choice"] == {"type": "tool", "name": "final_result"}
    [tool] = body["tools"]
    assert tool["name"] == "final_result" and tool["input_schema"] == INVOICE_SCHEMA
    assert "output_config" not in body
    wire = json.dumps(shown, separators=(",", ":"), ensure_ascii=False).encode()
    assert server.requests[0].body == wire


async def test_tool_mode_streams_the_output_as_partials_never_a_tool_use(
    server: FakeAnthropic,
) -> None:
    server.reply(tool_use({"number": "A", "total": 2}), stop_reason="tool_use")
    kinds, partials = [], []
    async with agent_for(server, output_mode="tool") as agent:
        async for event in agent.stream("Extract."):
            kinds.append(event.type)
            if event.type == "partial":
                partials.append(event.data)
            elif event.type == "done":
                result = event.data
    # the fake sends the input in pieces (input_json_delta): partials grow as they arrive
    assert len(partials) > 1 and partials[-1] == {"number": "A", "total": 2}
    assert "tool_use" not in kinds
    assert result.structured == Invoice("A", 2.0)


async def test_tool_mode_with_own_tools_lets_the_model_call_any_tool(
    server: FakeAnthropic,
) -> None:
    def lookup(number: str) -> str:
        """Look an invoice up."""
        return "total 2"

    server.reply(
        {"type": "tool_use", "id": "toolu_0", "name": "lookup", "input": {"number": "A"}},
        stop_reason="tool_use",
    )
    server.reply(tool_use({"number": "A", "total": 2}), stop_reason="tool_use")
    async with agent_for(server, output_mode="tool", tools=[lookup]) as agent:
        result = await agent.run("Extract.")
    assert result.structured == Invoice("A", 2.0)
    assert server.requests[0].json["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in server.requests[0].json["tools"]] == ["lookup", "final_result"]


async def test_tool_mode_corrects_bad_input_with_an_error_tool_result(
    server: FakeAnthropic,
) -> None:
    server.reply(tool_use({"number": 1, "total": 2}, "toolu_1"), stop_reason="tool_use")
    server.reply(tool_use({"number": "1", "total": 2}, "toolu_2"), stop_reason="tool_use")
    async with agent_for(server, output_mode="tool") as agent:
        result = await agent.run("Extract.")
    assert result.structured == Invoice("1", 2.0)
    [answer] = server.requests[1].json["messages"][-1]["content"]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == "toolu_1"
    assert answer["is_error"] is True
    assert "$.number must be string" in json.dumps(answer["content"])


async def test_tool_mode_with_thinking_is_refused_locally(server: FakeAnthropic) -> None:
    options = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    async with agent_for(server, output_mode="tool", provider_options=options) as agent:
        result = await agent.run("Extract.")
    assert isinstance(result.status.error, OutputTypeError)
    assert "thinking" in str(result.status.error)
    assert server.requests == []


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_list_output_round_trips_in_each_mode(server: FakeAnthropic, mode: str) -> None:
    wire = {"response": [{"item": "pen", "qty": 2}, {"item": "ink"}]}
    if mode == "native":
        server.reply_text(json.dumps(wire))
    else:
        server.reply(tool_use(wire), stop_reason="tool_use")
    async with agent_for(server, list[Line], output_mode=mode) as agent:
        result = await agent.run("Lines?")
    assert result.structured == [Line("pen", 2), Line("ink", 1)]


# -- the documented schema complexity limits ---------------------------------------------------


def optional_fields(count: int, required: int = 1) -> dict[str, Any]:
    """An object schema with ``count`` optional properties (and ``required`` required ones)."""
    fields = {f"o{i:02d}": {"type": "string"} for i in range(count)}
    fields |= {f"r{i}": {"type": "string"} for i in range(required)}
    return {"type": "object", "properties": fields, "required": [f"r{i}" for i in range(required)]}


def nullable_fields(count: int) -> dict[str, Any]:
    """An object schema with ``count`` required properties of a union type."""
    fields = {f"u{i:02d}": {"anyOf": [{"type": "string"}, {"type": "null"}]} for i in range(count)}
    return {"type": "object", "properties": fields, "required": list(fields)}


def strict_tools(count: int, optional: int = 0) -> list[dict[str, Any]]:
    schema = optional_fields(optional, required=1) | {"additionalProperties": False}
    return [
        {"name": f"t{i}", "description": "A tool.", "strict": True, "input_schema": schema}
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("schema", "reply"),
    [
        (optional_fields(24), '{"r0": "a"}'),
        (nullable_fields(16), json.dumps(dict.fromkeys([f"u{i:02d}" for i in range(16)]))),
    ],
    ids=["24 optional", "16 unions"],
)
async def test_native_output_at_a_documented_limit_is_sent(
    server: FakeAnthropic, schema: dict[str, Any], reply: str
) -> None:
    server.reply_text(reply)
    async with agent_for(server, schema) as agent:
        result = await agent.run("Fill.")
    assert result.status.error is None
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (optional_fields(25), "$.o24: 25 optional properties"),
        (nullable_fields(17), "$.u16: 17 properties with a union type"),
    ],
    ids=["25 optional", "17 unions"],
)
async def test_native_output_one_past_a_documented_limit_is_refused_locally(
    server: FakeAnthropic, schema: dict[str, Any], said: str
) -> None:
    async with agent_for(server, schema) as agent:
        result = await agent.run("Fill.")
    error = result.status.error
    assert isinstance(error, OutputTypeError)
    assert said in error.reason and "the limit is" in error.reason
    assert 'output_mode="tool"' in error.reason  # the way out
    assert server.requests == []


async def test_strict_tools_of_the_options_count_with_the_output_schema(
    server: FakeAnthropic,
) -> None:
    options = {"extra_body": {"tools": strict_tools(2, optional=10)}}
    async with agent_for(server, optional_fields(5), provider_options=options) as agent:
        result = await agent.run("Fill.")
    error = result.status.error
    assert isinstance(error, OutputTypeError)
    assert "tools.t1.o09: 25 optional properties" in error.reason  # 5 + 10 + 10
    assert server.requests == []


@pytest.mark.parametrize(("count", "sent"), [(20, 1), (21, 0)])
async def test_native_output_takes_at_most_twenty_strict_tools(
    server: FakeAnthropic, count: int, sent: int
) -> None:
    server.reply_text('{"number": "A", "total": 1}')
    options = {"extra_body": {"tools": strict_tools(count)}}
    async with agent_for(server, provider_options=options) as agent:
        result = await agent.run("Extract.")
    assert len(server.requests) == sent
    if not sent:
        assert isinstance(result.status.error, OutputTypeError)
        assert "21 strict tools" in str(result.status.error)


async def test_tool_mode_is_not_held_to_the_limits_of_strict_schemas(
    server: FakeAnthropic,
) -> None:
    server.reply(tool_use({"r0": "a"}), stop_reason="tool_use")
    async with agent_for(server, optional_fields(25), output_mode="tool") as agent:
        result = await agent.run("Fill.")
    assert result.structured == {"r0": "a"}
    assert "strict" not in server.requests[0].json["tools"][0]


# -- the schema rules, for any schema ----------------------------------------------------------

_LEAVES = st.sampled_from(
    [
        {"type": "string", "maxLength": 5},
        {"type": "integer", "minimum": 0},
        {"enum": ["a", "b"]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"type": "object", "additionalProperties": {"type": "integer"}},
    ]
)
_NAMES = st.sampled_from(["a", "b", "c"])


def _objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(
            lambda props: {"type": "object", "properties": props},
            st.dictionaries(_NAMES, children, min_size=1, max_size=3),
        ),
        st.builds(lambda items: {"type": "array", "items": items}, children),
    )


SCHEMAS: st.SearchStrategy[dict[str, Any]] = st.builds(
    lambda props: {"type": "object", "properties": props},
    st.dictionaries(_NAMES, st.recursive(_LEAVES, _objects, max_leaves=12), min_size=1),
)
_NOT_ENFORCED = ("minimum", "maxLength")


def _taken_everywhere(node: Any) -> bool:
    if isinstance(node, list):
        return all(_taken_everywhere(n) for n in node)
    if not isinstance(node, dict):
        return True
    if node.get("type") == "object" and node.get("additionalProperties") is not False:
        return False
    if any(key in node for key in _NOT_ENFORCED):
        return False
    return all(_taken_everywhere(v) for v in node.values())


@given(SCHEMAS)
@settings(max_examples=200, deadline=None)
def test_any_schema_is_made_what_the_api_takes_or_refused(schema: dict[str, Any]) -> None:
    try:
        made = output_schema(schema, "Out")
    except OutputTypeError as error:
        assert "open dict" in str(error)
        assert '"additionalProperties": {' in json.dumps(schema)
        return
    assert _taken_everywhere(made)


# -- the command -------------------------------------------------------------------------------


def test_oma_run_schema_prints_the_object_and_render_shows_the_format(
    server: FakeAnthropic, tmp_path: Path
) -> None:
    server.reply_text('{"name": "Ada", "age": 36}')
    env = {"OMA_HOME": str(tmp_path), "ANTHROPIC_API_KEY": "test-key"}
    common = ["-p", "anthropic", "--base-url", server.url, "--schema", "name, age int"]
    done = CliRunner().invoke(cli, ["run", *common, "--no-log", "Ada is 36."], env=env)
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"name": "Ada", "age": 36}
    shown = CliRunner().invoke(cli, ["render", *common, "Ada is 36."], env=env)
    assert shown.exit_code == 0, shown.output
    sent = server.requests[0].json["output_config"]
    assert json.loads(shown.output)["output_config"] == sent
    assert sent["format"]["schema"]["additionalProperties"] is False
