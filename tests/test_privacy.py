"""Privacy: under "none" and "redacted" no secret or media piece is stored or emitted.

Checked end to end: evaluation payloads and stored results, spans (with content tracing on for
"redacted"), log records, and the error put in ``RunResult.status.error``.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
from _builders import agent_config, make_orchestrator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oma_core import (
    AgentConfig,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    ProviderError,
)
from oma_core.evaluation import EvalCase, EvalResult, Score
from oma_core.plugins import PluginHost
from oma_core.testing import ScriptedProvider

KEY = "sk-ant-api03-Hq7Vb2Xk9LmP4nR8sT1wY6zA3cE5gJ0d"
TOKEN = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXRoYXQtaXMtbG9uZw"
IMAGE = base64.b64encode(bytes((i * 37 + 11) % 256 for i in range(600))).decode()
PROMPT = f"Use key {KEY} with header Authorization: {TOKEN} please"


def _conversation() -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": PROMPT},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": IMAGE},
                },
            ],
        }
    ]


def _leaks(text: str) -> list[str]:
    found = [name for name, secret in (("key", KEY), ("token", TOKEN.split()[1])) if secret in text]
    if any(IMAGE[i : i + 16] in text for i in range(len(IMAGE) - 15)):
        found.append("image")
    return found


@pytest.mark.parametrize("policy", ["none", "redacted"])
async def test_nothing_secret_is_stored_or_emitted(
    policy: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    cases: list[EvalCase] = []
    results: list[EvalResult] = []

    def scorer(case: EvalCase) -> Score:
        cases.append(case)
        return Score(1.0, f"judged: {case.output}")

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(
            [scorer],
            store_payloads=policy,
            on_result=results.append,  # type: ignore[arg-type]
        ),
        plugins=PluginHost(load_entrypoints=False),
        tracer_provider=tracer_provider,
        trace_content=policy == "redacted",
    )
    echo_error = ProviderError(f"invalid request: {PROMPT} image={IMAGE}", status_code=400)
    failing = AgentConfig("a", provider=ScriptedProvider([echo_error]), model="m")
    echoing = AgentConfig("b", provider=ScriptedProvider([f"you said {PROMPT} {IMAGE}"]))

    failed = await oma.run_agent(failing, _conversation(), metadata={"api_key": KEY})
    answered = await oma.run_agent(echoing, PROMPT + " " + IMAGE)
    await oma.evaluation.flush()

    assert failed.status.code == "error"
    assert isinstance(failed.status.error, ProviderError)
    assert _leaks(str(failed.status.error)) == []
    assert answered.success
    assert len(cases) == 2 and len(results) == 2
    assert [_leaks(case.input) for case in cases] == [[], []]
    stored = json.dumps([repr(result) for result in results])
    assert _leaks(stored) == []
    spans = exporter.get_finished_spans()
    assert spans
    assert _leaks("\n".join(span.to_json() for span in spans)) == []
    logged = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert _leaks(logged + caplog.text) == []


async def test_redacted_payload_keeps_the_shape_and_a_media_digest() -> None:
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(
            [lambda c: cases.append(c) or 1.0], store_payloads="redacted"
        ),
        plugins=PluginHost(load_entrypoints=False),
    )
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), _conversation())
    await oma.evaluation.flush()
    payload = json.loads(cases[0].input)
    assert payload[0]["role"] == "user"
    text, image = payload[0]["content"]
    assert "Use key" in text["text"] and KEY not in text["text"]
    assert image["source"]["media_type"] == "image/png"
    assert image["source"]["bytes"] == 600
    assert len(image["source"]["sha256"]) == 64


async def test_failed_run_error_text_is_redacted() -> None:
    key = "sk-ant-api03-" + "Q" * 30
    provider = ScriptedProvider([ProviderError(f"bad request echo {key}", status_code=400)])
    result = await make_orchestrator().run_agent(agent_config(provider), "hi")
    assert result.status.code == "error"
    assert isinstance(result.status.error, ProviderError)
    assert result.status.error.status_code == 400
    assert key not in str(result.status.error)
