"""Mistral documents no number for how large a structured-output schema may be (its custom
structured outputs page, read 2026-12-02, gives none), so oma checks none: a schema past the
limits OpenAI and Anthropic document goes on Mistral's wire as it is, in either mode."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_mistral import FakeMistral, Reply

from oma_core import load_messages
from oma_core.testing.output_checks import schema_past_limits
from oma_core.toolkit import OutputRequest, Provider, ProviderRequest


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_schema_past_other_services_limits_goes_as_it_is(
    server: FakeMistral, provider: Provider, mode: Any
) -> None:
    server.reply(
        Reply(text="{}")
        if mode == "native"
        else Reply(text="", tool_calls=(("c1", "final_result", "{}"),))
    )
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    output = OutputRequest(schema_past_limits(), "final_result", mode)
    await provider.complete(ProviderRequest(model="m", messages=messages, output=output))
    body = server.requests[0].json
    sent = (
        body["response_format"]["json_schema"]["schema"]
        if mode == "native"
        else body["tools"][-1]["function"]["parameters"]
    )
    assert sent == schema_past_limits()
    assert json.dumps(sent).count('"anyOf"') == 30
