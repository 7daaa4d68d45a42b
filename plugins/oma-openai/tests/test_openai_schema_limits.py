"""OpenAI's documented limits on a strict schema ("Supported schemas" in the Structured Outputs
guide), checked before any request: each taken at the limit and refused one past it, naming
the output, the limit and the place; a refused schema makes no request, in native mode and in
tool mode (whose function is strict on OpenAI)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions, Reply
from oma_openai.strict import strict_schema

from oma_core import Agent, AgentConfig
from oma_core.errors import OutputTypeError

SERVICE = "OpenAI"


def obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def nested(depth: int) -> dict[str, Any]:
    schema = obj({"v": {"type": "string"}})
    for _ in range(depth - 1):
        schema = obj({"n": schema})
    return schema


def properties(count: int) -> dict[str, Any]:
    return obj({f"p{i}": {"type": "integer"} for i in range(count)})


def enum_values(count: int) -> dict[str, Any]:
    return obj({"e": {"enum": list(range(count))}})


def named(chars: int) -> dict[str, Any]:
    """1,000 properties whose names hold ``chars`` characters in all."""
    width, extra = divmod(chars, 1_000)
    names = [f"{i:03d}".ljust(width + (i < extra), "x") for i in range(1_000)]
    return obj({name: {"type": "string"} for name in names})


def large_enum(chars: int) -> dict[str, Any]:
    """One enum of 251 distinct strings holding ``chars`` characters in all."""
    width, extra = divmod(chars, 251)
    return obj({"e": {"enum": [f"{i:03d}".ljust(width + (i < extra), "x") for i in range(251)]}})


LIMITS = {
    "nesting": (nested, 10, "objects nest more than 10 levels deep", "$" + ".n" * 10),
    "properties": (properties, 5_000, "5001 object properties in all", "$.p5000"),
    "enum values": (enum_values, 1_000, "1001 enum values in all", "$.e"),
    "characters": (named, 120_000, "120001 characters of property names", "$.999"),
    "large enum": (large_enum, 15_000, "251 string values holds 15001 characters", "$.e"),
}


@pytest.mark.parametrize("limit", LIMITS)
def test_a_schema_at_the_limit_is_taken(limit: str) -> None:
    build, at, _, _ = LIMITS[limit]
    strict_schema(build(at), "Out", SERVICE)


@pytest.mark.parametrize("limit", LIMITS)
def test_a_schema_one_past_the_limit_is_refused_naming_it_and_the_place(limit: str) -> None:
    build, at, reason, place = LIMITS[limit]
    with pytest.raises(OutputTypeError) as error:
        strict_schema(build(at + 1), "Out", SERVICE)
    assert error.value.output_type == "Out"
    assert error.value.reason.startswith(f"{SERVICE} strict structured output cannot take {place}")
    assert reason in error.value.reason


def test_the_character_count_puts_a_passed_limit_on_the_first_property_past_it() -> None:
    with pytest.raises(OutputTypeError, match=r"cannot take \$\.999x*: 120001 characters"):
        strict_schema(named(120_001), "Out", SERVICE)


# -- end to end: no request leaves --------------------------------------------------------------


def agent_for(server: FakeChatCompletions, output_type: Any, **extra: Any) -> Agent[Any]:
    return Agent(
        AgentConfig(
            "t",
            provider="openai",
            model="gpt-test",
            base_url=server.base_url,
            api_key=API_KEY,
            output_type=output_type,
            **extra,
        )
    )


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_schema_past_a_limit_makes_no_request(
    server: FakeChatCompletions, mode: str
) -> None:
    async with agent_for(server, enum_values(1_001), output_mode=mode) as agent:
        result = await agent.run("Pick.")
    error = result.status.error
    assert isinstance(error, OutputTypeError)
    assert "1001 enum values in all; the limit is 1000" in str(error)
    assert server.requests == []


async def test_a_schema_at_the_limits_is_sent(server: FakeChatCompletions) -> None:
    server.reply(Reply(text='{"e": 999}'))
    async with agent_for(server, enum_values(1_000)) as agent:
        result = await agent.run("Pick.")
    assert result.structured == {"e": 999}
    assert len(server.requests) == 1
