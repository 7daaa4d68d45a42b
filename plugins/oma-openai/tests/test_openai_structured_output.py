"""Structured output through the OpenAI plugin, in prompted mode (the mode every provider has
until its native mode lands): the schema in the system message on the wire, the reply validated
into the output type, a corrective turn for an invalid one, a ``length`` stop never parsed."""

from __future__ import annotations

import attrs
from fake_openai import API_KEY, FakeChatCompletions, Reply

from oma_core import Agent, AgentConfig, OutputValidationError


@attrs.frozen
class Invoice:
    number: str
    total: float


def agent_for(server: FakeChatCompletions) -> Agent[Invoice]:
    config = AgentConfig(
        "t",
        provider="openai",
        model="gpt-test",
        base_url=server.base_url,
        api_key=API_KEY,
        output_type=Invoice,
    )
    return Agent(config)


def system_text(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    first = messages[0]
    assert first["role"] in ("system", "developer")
    content = first["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


async def test_an_invoice_comes_back_typed_with_the_schema_on_the_wire(
    server: FakeChatCompletions,
) -> None:
    server.reply(Reply(text='{"number": "INV-42", "total": 99.5}'))
    async with agent_for(server) as agent:
        result = await agent.run("Extract the invoice.")
    assert result.structured == Invoice("INV-42", 99.5)
    assert '"required":["number","total"]' in system_text(server.requests[0].json)


async def test_an_invalid_reply_gets_one_corrective_request(server: FakeChatCompletions) -> None:
    server.reply(
        Reply(text='{"number": 42, "total": 1}'), Reply(text='{"number": "42", "total": 1}')
    )
    async with agent_for(server) as agent:
        result = await agent.run("Extract the invoice.")
    assert result.structured == Invoice("42", 1.0)
    assert len(server.requests) == 2
    last = server.requests[1].json["messages"][-1]
    assert "$.number must be string" in str(last["content"])
    assert result.usage.input_tokens == 24  # both attempts counted


async def test_a_reply_cut_at_the_length_limit_is_not_parsed(server: FakeChatCompletions) -> None:
    server.reply(Reply(text='{"number": "INV-42", "total": 99.5}', finish_reason="length"))
    async with agent_for(server) as agent:
        result = await agent.run("Extract the invoice.")
    assert isinstance(result.status.error, OutputValidationError)
    assert result.structured is None
    assert len(server.requests) == 1
