"""Gemini's documented limits on structured output, checked before any request: the one number
it gives, 512 function declarations a request (tool mode's output function is one of them),
taken at the limit and refused one past it with no request; a schema past other services'
limits goes as it is (Gemini documents no number for a schema's size)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_gemini import FakeGemini, Reply
from oma_gemini.mapping import MAX_FUNCTION_DECLARATIONS

from oma_core import load_messages
from oma_core.errors import OutputTypeError
from oma_core.testing.output_checks import schema_past_limits
from oma_core.toolkit import OutputRequest, Provider, ProviderRequest, ToolDefinition

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}


def request(mode: Any, tools: int = 0, schema: dict[str, Any] = SCHEMA) -> ProviderRequest:
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    own = tuple(ToolDefinition(f"t{i}", "A tool.", {"type": "object"}) for i in range(tools))
    output = OutputRequest(schema, "final_result", mode)
    return ProviderRequest(model="gemini-2.5-flash", messages=messages, tools=own, output=output)


def test_the_limit_is_the_one_google_genai_documents() -> None:
    from google.genai import types

    documented = types.Tool.model_fields["function_declarations"].description or ""
    assert f"Maximum {MAX_FUNCTION_DECLARATIONS} function declarations" in documented


async def test_tool_output_making_512_declarations_is_sent(
    server: FakeGemini, provider: Provider
) -> None:
    server.reply(Reply(text="", calls=(("c1", "final_result", {"name": "A"}),)))
    await provider.complete(request("tool", tools=MAX_FUNCTION_DECLARATIONS - 1))
    declarations = server.requests[0].json["tools"][0]["functionDeclarations"]
    assert len(declarations) == MAX_FUNCTION_DECLARATIONS


@pytest.mark.parametrize("call", ["complete", "stream", "render"])
async def test_tool_output_making_513_declarations_is_refused_with_no_request(
    server: FakeGemini, provider: Provider, call: str
) -> None:
    over = request("tool", tools=MAX_FUNCTION_DECLARATIONS)
    with pytest.raises(OutputTypeError) as error:
        if call == "complete":
            await provider.complete(over)
        elif call == "stream":
            [event async for event in provider.stream(over)]
        else:
            provider.render(over)
    assert error.value.output_type == "final_result"
    assert "513 function declarations, and the limit is 512" in error.value.reason
    assert 'output_mode="native"' in error.value.reason
    assert server.requests == []


async def test_native_output_needs_no_declaration_and_takes_512_tools(
    server: FakeGemini, provider: Provider
) -> None:
    server.reply(Reply(text='{"name": "A"}'))
    await provider.complete(request("native", tools=MAX_FUNCTION_DECLARATIONS))
    assert len(server.requests) == 1


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_schema_past_other_services_limits_goes_as_it_is(
    server: FakeGemini, provider: Provider, mode: str
) -> None:
    server.reply(
        Reply(text="{}")
        if mode == "native"
        else Reply(text="", calls=(("c1", "final_result", {}),))
    )
    await provider.complete(request(mode, schema=schema_past_limits()))
    body = server.requests[0].json
    sent = (
        body["generationConfig"]["responseJsonSchema"]
        if mode == "native"
        else body["tools"][0]["functionDeclarations"][-1]["parametersJsonSchema"]
    )
    assert sent == schema_past_limits()
