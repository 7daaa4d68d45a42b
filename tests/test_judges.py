"""LLM judges: a scorer that asks a model for a structured verdict, under the privacy policy,
traced as a run."""

from __future__ import annotations

import json
import pickle
from typing import Any, TypedDict

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oma_core import (
    AgentConfig,
    EvalCase,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    Score,
    dump_messages,
)
from oma_core.evaluation import (
    JUDGE_PROMPT,
    EvalResult,
    PayloadWithheldError,
    Verdict,
    judge,
)
from oma_core.plugins import PluginHost
from oma_core.testing import ScriptedProvider

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
    "rkJggg=="
)


def _verdict(score: float, *reasons: str) -> str:
    return json.dumps({"score": score, "reasons": list(reasons)})


def _case(**changes: Any) -> EvalCase:
    fields: dict[str, Any] = {"input": '"What is 2+2?"', "output": "4", "run_id": "r1"}
    fields.update(changes)
    return EvalCase(**fields)


def _all_text(provider: ScriptedProvider) -> str:
    """Everything the provider received, as one text: prompts, system prompts, messages."""
    parts = []
    for request in provider.requests:
        parts.append(request.system_prompt or "")
        parts.append(json.dumps(dump_messages(request.messages)))
    return "\n".join(parts)


async def test_a_judge_scores_with_the_verdicts_score_and_reasons() -> None:
    model = ScriptedProvider([_verdict(0.75, "correct", "terse")])
    scorer = judge(AgentConfig("grader", provider=model), "Is the answer correct?")
    score = await scorer(_case())
    assert score == Score(0.75, "correct; terse")


async def test_a_judge_asks_with_the_rubric_the_input_and_the_output() -> None:
    model = ScriptedProvider([_verdict(1.0)])
    scorer = judge(AgentConfig("grader", provider=model), "Answers must be numbers.")
    await scorer(_case(output="four"))
    asked = model.text_of(0)
    assert "Answers must be numbers." in asked
    assert "What is 2+2?" in asked and "four" in asked
    assert (model.requests[0].system_prompt or "").startswith(JUDGE_PROMPT)


async def test_a_verdict_score_outside_zero_to_one_gets_a_corrective_turn() -> None:
    model = ScriptedProvider([_verdict(7), _verdict(0.5, "fixed")])
    score = await judge(AgentConfig("g", provider=model), "rubric")(_case())
    assert score.value == 0.5
    assert "score must be between 0 and 1" in model.text_of(1)


async def test_a_judge_run_that_fails_raises_its_error() -> None:
    model = ScriptedProvider(["not json", "still not json"])
    scorer = judge(AgentConfig("g", provider=model), "rubric")
    with pytest.raises(Exception, match="not valid structured output"):
        await scorer(_case())


class Graded(TypedDict):
    score: float
    reason: str
    label: str


async def test_a_judge_takes_its_own_verdict_type() -> None:
    reply = json.dumps({"score": 0.2, "reason": "off topic", "label": "bad"})
    scorer = judge(AgentConfig("g", provider=ScriptedProvider([reply])), "r", output_type=Graded)
    assert await scorer(_case()) == Score(0.2, "off topic")


def test_a_verdict_type_without_a_numeric_score_is_refused_when_the_judge_is_made() -> None:
    class NoScore(TypedDict):
        grade: str

    with pytest.raises(TypeError, match="numeric 'score' property; NoScore has none"):
        judge(AgentConfig("g"), "r", output_type=NoScore)


def test_a_judge_needs_a_rubric() -> None:
    with pytest.raises(TypeError, match="rubric must be non-empty text"):
        judge(AgentConfig("g"), "  ")


def test_the_default_verdict_holds_a_score_in_zero_to_one() -> None:
    assert Verdict(0.5, ["ok"]).score == 0.5
    with pytest.raises(ValueError, match="between 0 and 1"):
        Verdict(1.5, [])


def test_a_judge_is_named_after_its_agent_unless_named() -> None:
    assert judge(AgentConfig("grader"), "r").name == "judge_grader"
    assert judge(AgentConfig("grader"), "r", name="accuracy").name == "accuracy"


# -- privacy: a judge sends only what the policy lets out ---------------------------------------


async def test_a_case_under_store_payloads_none_is_never_sent() -> None:
    model = ScriptedProvider([_verdict(1.0)])
    scorer = judge(AgentConfig("g", provider=model), "r")
    with pytest.raises(PayloadWithheldError, match='store_payloads="none"'):
        await scorer(_case(store_payloads="none", output="the secret output"))
    assert model.requests == []


async def test_under_store_payloads_none_a_judge_sends_nothing_and_counts_as_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    judge_model = ScriptedProvider([_verdict(1.0)])
    results: list[EvalResult] = []
    oma = OpenMultiAgent(
        plugins=PluginHost(load_entrypoints=False),
        evaluation=OnlineEvaluationConfig(
            scorers=[judge(AgentConfig("g", provider=judge_model), "r")], on_result=results.append
        ),
    )
    assert "withholds every case from the judges" in caplog.text
    await oma.run_agent(AgentConfig("w", provider=ScriptedProvider(["secret output"])), "secret")
    await oma.evaluation.flush()
    assert judge_model.requests == []
    assert oma.evaluation.stats().failed == 1
    assert results[0].errors == {"judge_g": "PayloadWithheldError"}


def test_payload_withheld_error_pickles_with_its_policy() -> None:
    error = pickle.loads(pickle.dumps(PayloadWithheldError("none")))
    assert isinstance(error, PayloadWithheldError) and error.policy == "none"


async def _evaluated(policy: str, user_input: Any, output: str) -> ScriptedProvider:
    """One run evaluated by a judge under ``policy``; the judge's provider, to inspect."""
    judge_model = ScriptedProvider([_verdict(0.9, "fine")])
    scorer = judge(AgentConfig("g", provider=judge_model), "r")
    results: list[EvalResult] = []
    oma = OpenMultiAgent(
        plugins=PluginHost(load_entrypoints=False),
        evaluation=OnlineEvaluationConfig(
            scorers=[scorer],
            store_payloads=policy,
            on_result=results.append,  # type: ignore[arg-type]
        ),
    )
    worker = AgentConfig("w", provider=ScriptedProvider([output]))
    await oma.run_agent(worker, user_input)
    await oma.evaluation.flush()
    assert results and results[0].scores["judge_g"].value == 0.9
    return judge_model


async def test_under_redacted_the_judge_never_receives_media_bytes_or_secrets() -> None:
    secret = "sk-ant-" + "a1b2c3d4e5" * 4
    conversation = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"my key is {secret}; describe the image"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
            ],
        }
    ]
    judge_model = await _evaluated("redacted", conversation, f"A dot. Your key {secret} is safe.")
    sent = _all_text(judge_model)
    assert secret not in sent
    assert PNG not in sent and PNG[:40] not in sent
    assert "describe the image" in sent and "A dot." in sent  # what may leave, left
    assert "sha256" in sent


async def test_under_full_the_judge_receives_the_run_as_it_was() -> None:
    judge_model = await _evaluated("full", "What is the capital of Norway?", "Oslo")
    sent = judge_model.text_of(0)
    assert "What is the capital of Norway?" in sent and "Oslo" in sent


async def test_a_judges_run_is_not_evaluated_in_turn() -> None:
    judge_model = ScriptedProvider([_verdict(0.9)])
    oma = OpenMultiAgent(
        plugins=PluginHost(load_entrypoints=False),
        evaluation=OnlineEvaluationConfig(
            scorers=[judge(AgentConfig("g", provider=judge_model), "r")], store_payloads="full"
        ),
    )
    await oma.run_agent(AgentConfig("w", provider=ScriptedProvider(["hi"])), "hello")
    await oma.evaluation.flush()
    stats = oma.evaluation.stats()
    assert (stats.sampled, stats.scored, stats.failed) == (1, 1, 0)
    assert len(judge_model.requests) == 1


# -- tracing: a judge's call is a run the tracing plugin sees ------------------------------------


async def test_a_judges_call_is_traced_as_a_run_of_its_own() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    judge_model = ScriptedProvider([_verdict(0.9)])
    oma = OpenMultiAgent(
        plugins=PluginHost(load_entrypoints=False),
        tracer_provider=tracer_provider,
        evaluation=OnlineEvaluationConfig(
            scorers=[judge(AgentConfig("grader", provider=judge_model), "r")],
            store_payloads="redacted",
        ),
    )
    await oma.run_agent(AgentConfig("w", provider=ScriptedProvider(["hi"])), "hello")
    await oma.evaluation.flush()
    names = [span.name for span in exporter.get_finished_spans()]
    assert "invoke_agent w" in names
    assert "invoke_agent grader" in names
    assert any(name.startswith("chat") for name in names)
