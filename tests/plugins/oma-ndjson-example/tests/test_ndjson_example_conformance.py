"""The conformance kit, run on the Ollama-like example plugin against its fake service."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from fake_ndjson_example import FakeNdjsonExample

from oma_core.testing import RecordedRequest
from oma_core.testing.conformance import ProviderConformance, Sample

# The fixture, imported: the core's tests collect this folder, and a conftest below the root
# may not load a plugin (a plugin of its own, generated from the template, has a conftest).
from oma_core.testing.pytest_plugin import fake_server_factory  # noqa: F401


class TestNdjsonExampleConformance(ProviderConformance):
    provider_name = "ndjson-example"
    # The service's stream errors are {"error": "text"}, with no type: error_event ignores
    # the type the kit passes, and the provider treats every such line as transient.
    transient_stream_error = "error"

    @pytest.fixture
    def server(self, fake_server_factory: Any) -> FakeNdjsonExample:  # noqa: F811
        return fake_server_factory(FakeNdjsonExample)  # type: ignore[no-any-return]

    def script_text(self, server: FakeNdjsonExample, text: str) -> None:
        server.reply(text)

    def script_tool_call(
        self, server: FakeNdjsonExample, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        server.reply(
            "", [{"id": call_id, "function": {"name": name, "arguments": dict(arguments)}}]
        )

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, _, _ = sample.locator  # one wire message per message of these samples
        sent = request.json["messages"][message]
        block = sample.block
        if sample.block_type == "text":
            assert sent["content"] == block["text"], sample.id
        elif sample.block_type == "image":
            assert sent["images"] == [block["source"]["data"]], sample.id
        elif sample.block_type == "tool_use":
            call = {"name": block["name"], "arguments": block["input"]}
            assert sent["tool_calls"] == [{"id": block["id"], "function": call}], sample.id
        else:  # tool_result
            assert sent == {"role": "tool", "content": block["content"], "tool_name": "lookup"}
