"""Amazon Bedrock documents no number for how large a structured-output schema may be (its
"Get validated JSON results from models" page, read 2026-12-02, lists the JSON Schema subset
it takes and no size), so oma checks none: a schema past the limits OpenAI and Anthropic
document goes on the Converse wire as it is, in either mode."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore_model import MODEL, assert_botocore_takes
from fake_bedrock import FakeBedrock

from oma_core import load_messages
from oma_core.testing.output_checks import schema_past_limits
from oma_core.toolkit import OutputRequest, ProviderRequest


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_schema_past_other_services_limits_goes_as_it_is(
    server: FakeBedrock, provider: Any, mode: Any
) -> None:
    if mode == "native":
        server.reply_text("{}")
    else:
        server.reply_tool_use("tu1", "final_result", {})
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    output = OutputRequest(schema_past_limits(closed=True), "final_result", mode)
    await provider.complete(ProviderRequest(model=MODEL, messages=messages, output=output))
    body = server.requests[0].json
    assert_botocore_takes(body, "Converse")
    sent = (
        json.loads(body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"])
        if mode == "native"
        else body["toolConfig"]["tools"][-1]["toolSpec"]["inputSchema"]["json"]
    )
    assert sent == schema_past_limits(closed=True)
