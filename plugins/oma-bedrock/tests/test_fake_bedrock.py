"""The fake Converse API holds a plugin to what the service checks, so a pass means something:
reasoning it signed must come back with its text unchanged."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fake_bedrock import FakeBedrock


@pytest.mark.parametrize(("sent", "status"), [("I think.", 200), ("I think otherwise.", 400)])
async def test_signed_reasoning_must_come_back_with_its_text(
    server: FakeBedrock, sent: str, status: int
) -> None:
    signature = server.reply_reasoning("I think.", {"text": "Done."})
    reasoning = {"reasoningContent": {"reasoningText": {"text": sent, "signature": signature}}}
    body: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": [{"text": "q"}]},
            {"role": "assistant", "content": [reasoning, {"text": "Done."}]},
            {"role": "user", "content": [{"text": "again"}]},
        ]
    }
    server.api_key = "k"
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{server.url}/model/anthropic.claude-x/converse",
            json=body,
            headers={"authorization": "Bearer k"},
        )
    assert reply.status_code == status, reply.text
    if status == 400:
        assert "signature fails" in reply.text
