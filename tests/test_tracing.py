"""OpenTelemetry spans: names, GenAI attributes, nesting, content off by default, errors."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from _builders import make_orchestrator
from _waiting import until
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from oma_core import AgentConfig, InvalidMessageError, OpenMultiAgent, ProviderError, tool
from oma_core.plugins import PluginHost
from oma_core.retry import RetryPolicy
from oma_core.testing import ScriptedProvider


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _traced_oma(exporter: InMemorySpanExporter, **kwargs: Any) -> OpenMultiAgent:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    async def no_sleep(seconds: float) -> None:
        return None

    return OpenMultiAgent(
        plugins=PluginHost(load_entrypoints=False),
        tracer_provider=provider,
        retry_policy=RetryPolicy(sleep=no_sleep),
        **kwargs,
    )


def _by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


async def test_a_run_has_run_chat_and_tool_spans_with_genai_attributes(
    exporter: InMemorySpanExporter,
) -> None:
    provider = ScriptedProvider(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"city": "Oslo"}}
                ],
            },
            "It is sunny.",
        ]
    )
    config = AgentConfig("weather", provider=provider, model="m-1", tools=[lookup])
    result = await _traced_oma(exporter).run_agent(config, "Weather in Oslo?", run_id="run-1")
    assert result.success
    spans = exporter.get_finished_spans()
    (run,) = _by_name(spans, "invoke_agent")
    chats = _by_name(spans, "chat ")
    (tool_span,) = _by_name(spans, "execute_tool")
    assert run.name == "invoke_agent weather"
    assert [c.name for c in chats] == ["chat m-1", "chat m-1"]
    assert tool_span.name == "execute_tool lookup"
    assert run.attributes is not None and chats[0].attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "weather"
    assert run.attributes["oma.run_id"] == "run-1"
    chat = chats[0].attributes
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "scripted"
    assert chat["gen_ai.request.model"] == "m-1"
    assert chat["gen_ai.usage.input_tokens"] > 0
    assert chat["gen_ai.usage.output_tokens"] > 0
    assert chat["oma.run_id"] == "run-1"
    assert chat["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert (chats[1].attributes or {})["gen_ai.response.finish_reasons"] == ("end_turn",)
    for child in [*chats, tool_span]:
        assert child.parent is not None and child.parent.span_id == run.context.span_id


async def test_spans_carry_no_content_by_default(exporter: InMemorySpanExporter) -> None:
    provider = ScriptedProvider(["the secret answer"])
    await _traced_oma(exporter).run_agent(
        AgentConfig("a", provider=provider), "the secret question"
    )
    for span in exporter.get_finished_spans():
        text = repr(dict(span.attributes or {})) + repr([e.attributes for e in span.events])
        assert "secret" not in text


async def test_trace_content_puts_redacted_input_and_output_on_the_run_span(
    exporter: InMemorySpanExporter,
) -> None:
    key = "sk-ant-api03-" + "K" * 30
    provider = ScriptedProvider(["answer"])
    await _traced_oma(exporter, trace_content=True).run_agent(
        AgentConfig("a", provider=provider), f"question with {key}"
    )
    (run,) = _by_name(exporter.get_finished_spans(), "invoke_agent")
    attributes = run.attributes or {}
    assert "question with" in str(attributes["gen_ai.input.messages"])
    assert key not in str(attributes["gen_ai.input.messages"])
    assert attributes["gen_ai.output.messages"] == "answer"


async def test_errors_are_recorded_with_redacted_text(exporter: InMemorySpanExporter) -> None:
    key = "sk-ant-api03-" + "E" * 30
    provider = ScriptedProvider([ProviderError(f"echo {key}", status_code=400)])
    result = await _traced_oma(exporter).run_agent(AgentConfig("a", provider=provider), "hi")
    assert not result.success
    spans = exporter.get_finished_spans()
    (run,) = _by_name(spans, "invoke_agent")
    (chat,) = _by_name(spans, "chat")
    assert run.status.status_code is StatusCode.ERROR
    assert chat.status.status_code is StatusCode.ERROR
    assert (chat.attributes or {})["error.type"] == "ProviderError"
    for span in spans:
        dumped = repr(span.status.description) + repr([e.attributes for e in span.events])
        assert key not in dumped


async def test_each_attempt_gets_its_own_chat_span(exporter: InMemorySpanExporter) -> None:
    provider = ScriptedProvider([ProviderError("busy", status_code=503), "ok"])
    await _traced_oma(exporter).run_agent(AgentConfig("a", provider=provider), "hi", max_retries=2)
    chats = _by_name(exporter.get_finished_spans(), "chat")
    assert [c.status.status_code for c in chats] == [StatusCode.ERROR, StatusCode.UNSET]


async def test_no_configured_provider_records_nothing() -> None:
    oma = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
    result = await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert result.success


def test_import_oma_core_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, oma_core\n"
        "oma_core.OpenMultiAgent, oma_core.OnlineEvaluationConfig, oma_core.Budget\n"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_a_call_stopped_by_a_budget_still_ends_its_span_with_usage(
    exporter: InMemorySpanExporter,
) -> None:
    provider = ScriptedProvider(["a long answer " * 20, "never"])
    result = await _traced_oma(exporter).run_agent(
        AgentConfig("a", provider=provider), "hi", max_token_budget=5
    )
    assert result.status.code == "budget_exhausted"
    spans = exporter.get_finished_spans()
    (chat,) = _by_name(spans, "chat")
    (run,) = _by_name(spans, "invoke_agent")
    attributes = chat.attributes or {}
    assert attributes["gen_ai.request.max_tokens"] == 5
    assert attributes["gen_ai.usage.output_tokens"] > 5
    assert "error.type" not in attributes
    assert (run.attributes or {})["oma.status"] == "budget_exhausted"
    assert run.status.status_code is StatusCode.ERROR


async def test_a_cancelled_run_ends_its_spans(exporter: InMemorySpanExporter) -> None:
    import asyncio

    from oma_core.testing import Delayed

    provider = ScriptedProvider([Delayed(30, "late")])
    task = asyncio.ensure_future(
        _traced_oma(exporter).run_agent(AgentConfig("a", provider=provider, model="m"), "hi")
    )
    await until(lambda: provider.requests)  # the chat span is open
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spans = exporter.get_finished_spans()
    (run,) = _by_name(spans, "invoke_agent")
    (chat,) = _by_name(spans, "chat")
    assert (run.attributes or {})["error.type"] == "cancelled"
    assert (chat.attributes or {})["error.type"] == "cancelled"
    assert run.end_time is not None and chat.end_time is not None


async def test_the_run_span_carries_provider_model_and_usage(
    exporter: InMemorySpanExporter,
) -> None:
    provider = ScriptedProvider(["fine"])
    result = await _traced_oma(exporter).run_agent(
        AgentConfig("a", provider=provider, model="m-2"), "hi"
    )
    (run,) = _by_name(exporter.get_finished_spans(), "invoke_agent")
    attributes = run.attributes or {}
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.request.model"] == "m-2"
    assert attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert attributes["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert attributes["oma.status"] == "ok"


async def test_invalid_input_starts_no_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    oma = make_orchestrator(tracer_provider=tracer_provider)
    with pytest.raises(InvalidMessageError):
        oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["x"])), [{"role": "robot"}])
    assert exporter.get_finished_spans() == ()


class _CachingProvider:
    """A provider object whose one reply reports cache and reasoning parts of its usage."""

    name = "caching"

    async def complete(self, request: Any) -> Any:
        from oma_core import LLMMessage, TextBlock, Usage
        from oma_core.providers import ProviderResponse

        usage = Usage(1200, 90, cache_read_tokens=1000, cache_write_tokens=150, reasoning_tokens=40)
        return ProviderResponse(LLMMessage("assistant", (TextBlock("ok"),)), usage)


async def test_cache_and_reasoning_counts_are_genai_usage_attributes_on_both_spans(
    exporter: InMemorySpanExporter,
) -> None:
    await _traced_oma(exporter).run_agent(AgentConfig("a", provider=_CachingProvider()), "hi")
    spans = exporter.get_finished_spans()
    for span in (*_by_name(spans, "invoke_agent"), *_by_name(spans, "chat")):
        attributes = span.attributes or {}
        assert attributes["gen_ai.usage.input_tokens"] == 1200
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == 1000
        assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 150
        assert attributes["gen_ai.usage.reasoning.output_tokens"] == 40


async def test_zero_cache_and_reasoning_counts_are_left_off_the_span(
    exporter: InMemorySpanExporter,
) -> None:
    await _traced_oma(exporter).run_agent(
        AgentConfig("a", provider=ScriptedProvider(["fine"])), "hi"
    )
    (run,) = _by_name(exporter.get_finished_spans(), "invoke_agent")
    assert not [
        name for name in (run.attributes or {}) if ".cache_" in name or ".reasoning" in name
    ]
