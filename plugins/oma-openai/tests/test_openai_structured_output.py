"""Structured output through the OpenAI plugin, what only it has: native mode on OpenAI
(``response_format`` ``json_schema`` with a strict schema, byte for byte what ``render``
shows, on every transport), strict-mode rules applied or refused locally, strict functions in
tool mode where the preset has them, the corrective tool message, the modes each preset
declares; a refusal or a ``length`` stop is never parsed; ``oma run --schema``. That each
declared mode reaches the service and comes back typed, with one corrective turn, for the
openai, minimax and deepseek presets, is the conformance kit's
(``test_openai_conformance.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from fake_openai import API_KEY, FakeChatCompletions, Reply
from hypothesis import given, settings
from hypothesis import strategies as st
from oma_openai import PRESETS
from oma_openai.strict import strict_schema

from oma_core import Agent, AgentConfig, OutputValidationError
from oma_core.errors import OutputTypeError


@attrs.frozen
class Invoice:
    number: str
    total: float


@attrs.frozen
class Line:
    item: str
    qty: int = 1
    note: str | None = None


@attrs.frozen
class Order:
    lines: list[Line]


INVOICE_STRICT = {
    "type": "object",
    "properties": {"number": {"type": "string"}, "total": {"type": "number"}},
    "required": ["number", "total"],
    "additionalProperties": False,
}


def agent_for(
    server: FakeChatCompletions, output_type: Any = Invoice, provider: str = "openai", **extra: Any
) -> Agent[Any]:
    config = AgentConfig(
        "t",
        provider=provider,
        model="gpt-test",
        base_url=server.base_url,
        api_key=API_KEY,
        output_type=output_type,
        **extra,
    )
    return Agent(config)


# -- native mode: response_format json_schema --------------------------------------------------


async def test_an_invoice_comes_back_typed_with_the_strict_schema_in_response_format(
    server: FakeChatCompletions,
) -> None:
    server.reply(Reply(text='{"number": "INV-42", "total": 99.5}'))
    async with agent_for(server) as agent:
        result = await agent.run("Extract the invoice.")
    assert result.structured == Invoice("INV-42", 99.5)
    body = server.requests[0].json
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Invoice", "schema": INVOICE_STRICT, "strict": True},
    }
    assert [m["role"] for m in body["messages"]] == ["user"]  # no instructions needed


async def test_the_wire_is_byte_for_byte_what_render_shows_on_every_transport(
    server: FakeChatCompletions, transport: str
) -> None:
    server.reply(Reply(text='{"number": "A", "total": 1}'))
    async with agent_for(server, provider_options={"transport": transport}) as agent:
        shown = agent.provider().render(agent.build_request("Extract."))
        result = await agent.run("Extract.")
    assert result.structured == Invoice("A", 1.0)
    wire = json.dumps(shown, ensure_ascii=False, separators=(",", ":")).encode()
    assert server.requests[0].body == wire


async def test_optional_properties_are_required_and_nullable_and_null_means_the_default(
    server: FakeChatCompletions,
) -> None:
    server.reply(Reply(text='{"lines": [{"item": "pen", "qty": null, "note": null}]}'))
    async with agent_for(server, Order) as agent:
        result = await agent.run("Read the order.")
    assert result.structured == Order([Line("pen", 1, None)])
    line = server.requests[0].json["response_format"]["json_schema"]["schema"]["properties"][
        "lines"
    ]["items"]
    assert line["required"] == ["item", "qty", "note"]
    assert line["properties"]["qty"] == {"type": ["integer", "null"]}
    assert line["additionalProperties"] is False


async def test_a_list_output_travels_wrapped_in_an_object(server: FakeChatCompletions) -> None:
    server.reply(Reply(text='{"response": [{"number": "A", "total": 1}]}'))
    async with agent_for(server, list[Invoice]) as agent:
        result = await agent.run("All invoices.")
    assert result.structured == [Invoice("A", 1.0)]
    schema = server.requests[0].json["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["response"] and schema["type"] == "object"


async def test_an_open_dict_is_refused_locally_before_any_request(
    server: FakeChatCompletions,
) -> None:
    @attrs.frozen
    class Tally:
        counts: dict[str, int]

    async with agent_for(server, Tally) as agent:
        result = await agent.run("Count.")
    error = result.status.error
    assert isinstance(error, OutputTypeError)
    assert "$.counts" in str(error) and "open dict" in str(error)
    assert server.requests == []


async def test_a_schema_nested_past_ten_levels_is_refused_locally(
    server: FakeChatCompletions,
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"v": {"type": "string"}}}
    for _ in range(10):
        schema = {"type": "object", "properties": {"n": schema}, "required": ["n"]}
    async with agent_for(server, schema) as agent:
        result = await agent.run("Nest.")
    assert isinstance(result.status.error, OutputTypeError)
    assert "10 levels" in str(result.status.error)
    assert server.requests == []


async def test_a_reply_cut_at_the_length_limit_is_not_parsed(server: FakeChatCompletions) -> None:
    server.reply(Reply(text='{"number": "INV-42", "total": 99.5}', finish_reason="length"))
    async with agent_for(server) as agent:
        result = await agent.run("Extract the invoice.")
    assert isinstance(result.status.error, OutputValidationError)
    assert result.structured is None
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_a_refusal_is_never_parsed_nor_asked_again(
    server: FakeChatCompletions, stream: bool
) -> None:
    server.reply(Reply(refusal="I can't help with that."))
    async with agent_for(server) as agent:
        if stream:
            async for event in agent.stream("Extract the invoice."):
                result = event.data
        else:
            result = await agent.run("Extract the invoice.")
    error = result.status.error
    assert isinstance(error, OutputValidationError)
    assert "refusal" in str(error)
    assert len(server.requests) == 1


async def test_streaming_yields_partial_objects_then_the_typed_output(
    server: FakeChatCompletions,
) -> None:
    server.reply(Reply(text='{"number": "INV-42", "total": 99.5}'))
    partials = []
    async with agent_for(server) as agent:
        async for event in agent.stream("Extract the invoice."):
            if event.type == "partial":
                partials.append(event.data)
            elif event.type == "done":
                result = event.data
    assert partials[0] == {} or "number" in partials[0]
    assert partials[-1] == {"number": "INV-42", "total": 99.5}
    assert result.structured == Invoice("INV-42", 99.5)


# -- tool mode and prompted mode ---------------------------------------------------------------


def test_deepseek_s_output_function_is_not_strict(server: FakeChatCompletions) -> None:
    agent = agent_for(server, provider="deepseek")
    body = agent.provider().render(agent.build_request("Extract."))
    [tool] = body["tools"]
    assert tool["function"]["name"] == "final_result"
    assert "strict" not in tool["function"]  # DeepSeek documents no strict functions


async def test_tool_mode_on_openai_sends_a_strict_function(server: FakeChatCompletions) -> None:
    server.reply(Reply(text=None, tool_calls=(("c1", "final_result", '{"number":"A","total":2}'),)))
    async with agent_for(server, output_mode="tool") as agent:
        result = await agent.run("Extract.")
    assert result.structured == Invoice("A", 2.0)
    [tool] = server.requests[0].json["tools"]
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"] == INVOICE_STRICT


async def test_tool_mode_corrects_bad_arguments_with_an_error_tool_message(
    server: FakeChatCompletions,
) -> None:
    server.reply(
        Reply(text=None, tool_calls=(("c1", "final_result", '{"number":1,"total":2}'),)),
        Reply(text=None, tool_calls=(("c2", "final_result", '{"number":"1","total":2}'),)),
    )
    async with agent_for(server, provider="deepseek") as agent:
        result = await agent.run("Extract.")
    assert result.structured == Invoice("1", 2.0)
    answer = server.requests[1].json["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "c1"
    assert "$.number must be string" in answer["content"]


def test_each_preset_declares_its_output_modes() -> None:
    modes = {p.name: p.capabilities.output_modes for p in PRESETS}
    native = {"openai", "groq", "openrouter", "ollama", "vllm", "lmstudio"}
    for name, declared in modes.items():
        assert "prompted" in declared and "tool" in declared
        assert ("native" in declared) == (name in native), name


# -- the command -------------------------------------------------------------------------------


def oma(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMA_", "OPENAI_"))}
    env["OMA_HOME"] = str(home)
    env["OPENAI_API_KEY"] = API_KEY
    return subprocess.run(
        [sys.executable, "-m", "oma_core.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


PERSON_STRICT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def unordered(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``required`` as a set (its order means nothing)."""
    return {**schema, "required": set(schema["required"])}


def test_oma_run_schema_prints_the_object_the_service_was_held_to(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    server.reply(Reply(text='{"name": "Ada", "age": 36}'))
    done = oma(
        tmp_path,
        "run",
        "-p",
        "openai",
        "--base-url",
        server.base_url,
        "--schema",
        "name, age int",
        "--no-log",
        "Ada is 36.",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
    format_ = server.requests[0].json["response_format"]
    assert format_["type"] == "json_schema"
    assert format_["json_schema"]["strict"] is True
    assert unordered(format_["json_schema"]["schema"]) == unordered(PERSON_STRICT)


def test_oma_render_schema_shows_the_body_with_the_strict_schema_in_place(
    tmp_path: Path,
) -> None:
    done = oma(tmp_path, "render", "-p", "openai", "--schema", "name, age int", "Ada is 36.")
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert unordered(body["response_format"]["json_schema"]["schema"]) == unordered(PERSON_STRICT)


# -- the strict rules, for any schema ----------------------------------------------------------

_LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "default": 3},
        {"enum": ["a", "b"]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"type": "object", "additionalProperties": {"type": "integer"}},
    ]
)


def _objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def build(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": properties,
            "required": [k for k in required if k in properties],
        }

    names = st.sampled_from(["a", "b", "c", "d"])
    return st.one_of(
        st.builds(build, st.dictionaries(names, children, min_size=1, max_size=3), st.lists(names)),
        st.builds(lambda items: {"type": "array", "items": items}, children),
    )


SCHEMAS: st.SearchStrategy[dict[str, Any]] = st.builds(
    lambda properties: {"type": "object", "properties": properties},
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.recursive(_LEAVES, _objects, max_leaves=12),
        min_size=1,
        max_size=3,
    ),
)


def _strict_everywhere(node: Any) -> bool:
    if isinstance(node, list):
        return all(_strict_everywhere(n) for n in node)
    if not isinstance(node, dict):
        return True
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            return False
        if set(node.get("required", [])) != set(node.get("properties", {})):
            return False
    if "default" in node:
        return False
    return all(_strict_everywhere(v) for v in node.values())


@given(SCHEMAS)
@settings(max_examples=200, deadline=None)
def test_any_schema_is_made_strict_or_refused_with_a_place(schema: dict[str, Any]) -> None:
    try:
        made = strict_schema(schema, "Out", "OpenAI Chat Completions")
    except OutputTypeError as error:
        assert "strict structured output cannot take $" in str(error)
        assert '"additionalProperties": {' in json.dumps(schema)  # only an open dict is refused
        return
    assert _strict_everywhere(made)
    assert made is not schema
