"""The provider conformance suite of oma_core.testing, run against the fake Converse API:
once signed with SigV4 from the AWS credential chain, once with a Bedrock API key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from fake_bedrock import FakeBedrock

from oma_core.testing import RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample

_IMAGE = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_FILE = {"application/pdf": "pdf", "text/plain": "txt"}


def expected_on_wire(block: Mapping[str, Any]) -> dict[str, Any]:
    """A section-2 block as the Converse API documents it (written from the docs, by hand)."""
    kind = block["type"]
    if kind == "text":
        return {"text": block["text"]}
    if kind == "image":
        source = block["source"]
        return {
            "image": {"format": _IMAGE[source["media_type"]], "source": {"bytes": source["data"]}}
        }
    if kind == "video":
        return {"video": {"format": "mp4", "source": {"bytes": block["source"]["data"]}}}
    if kind == "file":
        source = block["source"]
        return {
            "document": {
                "format": _FILE[source["media_type"]],
                "source": {"bytes": source["data"]},
                "name": "report",
            }
        }
    if kind == "tool_use":
        return {
            "toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}
        }
    if kind == "tool_result":
        content = block["content"]
        parts = (
            [{"text": content}]
            if isinstance(content, str)
            else [expected_on_wire(p) for p in content]
        )
        return {"toolResult": {"toolUseId": block["tool_use_id"], "content": parts}}
    if kind == "reasoning":
        text = {"text": block["text"], "signature": block["signature"]}
        return {"reasoningContent": {"reasoningText": text}}
    raise AssertionError(f"no expectation for {kind}")


def assert_block_on_wire(sample: Sample, request: RecordedRequest) -> None:
    message, index, part = sample.locator
    sent = request.json["messages"][message]["content"][index]
    if part is not None:
        sent = sent["toolResult"]["content"][part]
    assert sent == expected_on_wire(sample.block), sample.id
    assert request.json["messages"][message]["role"] == sample.conversation[message]["role"]


class TestBedrockConformanceSigV4(ProviderConformance):
    """Credentials from the environment (conftest), each request signed and checked."""

    provider_name = "bedrock"
    api_key = None  # type: ignore[assignment]  # no API key: SigV4 from the AWS chain
    transient_stream_error = "throttlingException"
    server_sent_events = False  # an AWS binary event stream

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeBedrock:
        return fake_server_factory(FakeBedrock)  # type: ignore[no-any-return]

    def script_text(self, server: FakeBedrock, text: str) -> None:
        server.reply_text(text)

    def script_tool_call(
        self, server: FakeBedrock, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply_tool_use(call_id, name, arguments)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
        assert_block_on_wire(sample, request)


class TestBedrockConformanceApiKey(TestBedrockConformanceSigV4):
    """A Bedrock API key (``AgentConfig.api_key``) sent as a bearer token."""

    api_key = "bedrock-api-key-for-tests"

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeBedrock:
        return fake_server_factory(FakeBedrock, api_key=self.api_key)  # type: ignore[no-any-return]

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        assert request.headers["authorization"] == f"Bearer {self.api_key}"
        assert_block_on_wire(sample, request)
