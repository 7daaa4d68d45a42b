"""What online evaluation stores of a run under each store_payloads policy, and its bounds."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pytest
from _builders import (
    REFERENCE_PNG,
    agent_config,
    assistant_turn,
    builtin_host,
    collecting_scorer,
    evaluated_case,
    make_orchestrator,
    named_image,
    png_block,
    reference_conversation,
    text_block,
    three_turn_conversation,
    user_turn,
)

from oma_core import (
    AgentConfig,
    EvalCase,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    dump_messages,
    hookimpl,
    load_messages,
)
from oma_core.evaluation import EvalResult, Evaluator, StorePayloads, build_payload
from oma_core.testing import ScriptedProvider

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode("ascii")


PNG_BYTES = len(base64.b64decode(PNG))


async def _evaluate(
    input: Any, store_payloads: StorePayloads = "none", output: str = "the answer", **kwargs: Any
) -> tuple[EvalCase, OpenMultiAgent]:
    cases: list[EvalCase] = []

    def scorer(case: EvalCase) -> float:
        cases.append(case)
        return 1.0

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[scorer], store_payloads=store_payloads)
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider([output])), input, **kwargs)
    await oma.evaluation.flush()
    assert len(cases) == 1
    return cases[0], oma


def _flat(value: Mapping[str, Any]) -> dict[str, Any]:
    """A source dict with any nested mapping's keys lifted to the top."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, Mapping):
            out.update(_flat(item))
        else:
            out[key] = item
    return out


CONVERSATION = [
    {"role": "user", "content": [{"type": "text", "text": "hello"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
    {"role": "user", "content": [{"type": "text", "text": "describe"}]},
]


def _evaluator(**kwargs: Any) -> tuple[Evaluator, list[EvalCase], list[EvalResult]]:
    cases: list[EvalCase] = []
    results: list[EvalResult] = []

    def scorer(case: EvalCase) -> float:
        cases.append(case)
        return 1.0

    kwargs.setdefault("scorers", [scorer])
    config = OnlineEvaluationConfig(on_result=results.append, plugin_scorers=False, **kwargs)
    return Evaluator(config), cases, results


def _submit(evaluator: Evaluator, value: Any = "twelve chars", output: str = "out") -> None:
    evaluator.submit(value, output, run_id="r1", metadata={"user": "u"}, status="ok", agent="a")


@pytest.mark.parametrize("mode", ["all", "", "FULL", None])
def test_any_other_store_payloads_value_is_refused(mode: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        OnlineEvaluationConfig(scorers=[], store_payloads=mode)


async def test_eval_case_under_none_holds_a_string_placeholder() -> None:
    case, oma = await _evaluate("hello world!", run_id="r1", metadata={"k": "v"})
    assert case.input == "[string input omitted; 12 characters]"
    assert case.output == "the answer"
    assert case.run_id == "r1"
    assert case.metadata == {"k": "v"}
    stats = oma.evaluation.stats()
    assert stats.sampled == 1 and stats.scored == 1
    assert stats.dropped == 0 and stats.failed == 0
    oma.evaluation.shutdown()

    string_case = await evaluated_case("What is shown?", "none")
    assert string_case.input == "[string input omitted; 14 characters]"
    array_case = await evaluated_case(reference_conversation(), "none")
    assert array_case.input == "[array input omitted; 3 items]"
    assert REFERENCE_PNG not in array_case.input

    assert build_payload("twelve chars", "none") == "[string input omitted; 12 characters]"
    messages = load_messages(CONVERSATION)
    assert build_payload(messages, "none") == "[array input omitted; 3 items]"


async def test_eval_case_under_none_holds_an_array_placeholder() -> None:
    case, _ = await _evaluate([user_turn("a"), assistant_turn("b"), user_turn("c")])
    assert case.input == "[array input omitted; 3 items]"
    assert case.output == "the answer"


async def test_eval_case_under_full_holds_the_input_json() -> None:
    conv = [user_turn("a", named_image("x.png?sig=1"))]
    case, _ = await _evaluate(conv, "full")
    assert json.loads(case.input) == conv

    string_case = await evaluated_case("What is shown?", "full")
    assert json.loads(string_case.input) == "What is shown?"
    conversation = reference_conversation()
    array_case = await evaluated_case(conversation, "full")
    assert json.loads(array_case.input) == conversation

    assert json.loads(build_payload('say "hi"', "full")) == 'say "hi"'


async def test_full_payloads_are_cut_at_8192_characters_with_a_marker() -> None:
    conv = [user_turn("z" * 20_000)]
    case, _ = await _evaluate(conv, "full")
    whole = json.dumps(conv)
    assert len(case.input) > 8192
    assert case.input[:8192] == whole[:8192]
    assert "z" * 8000 in case.input
    assert len(case.input) < 8192 + 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(case.input)

    long_text = "word " * 5000
    case = await evaluated_case([user_turn(long_text)], "full")
    assert 8192 <= len(case.input) < 8192 + 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(case.input)

    cases: list[EvalCase] = []
    oma = make_orchestrator(
        evaluation=OnlineEvaluationConfig([lambda c: cases.append(c) or 1.0], store_payloads="full")
    )
    small = three_turn_conversation()
    big = [{"role": "user", "content": [{"type": "text", "text": "y" * 10_000}]}]
    await oma.run_agent(agent_config(ScriptedProvider(["a", "b"])), small)
    await oma.run_agent(agent_config(ScriptedProvider(["c"])), big)
    await oma.evaluation.flush()
    assert json.loads(cases[0].input) == dump_messages(load_messages(small))
    assert cases[0].output == "a"
    assert len(cases[1].input) > 8192 and "truncated" in cases[1].input[8192:]

    evaluator, cases, _ = _evaluator(store_payloads="full")
    messages = load_messages(CONVERSATION)
    _submit(evaluator, messages)
    await evaluator.flush()
    assert json.loads(cases[0].input) == dump_messages(messages)

    evaluator, cases, results = _evaluator(store_payloads="full")
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "x" * 9000}]}])
    _submit(evaluator, messages)
    await evaluator.flush()
    assert cases[0].input.startswith(json.dumps(dump_messages(messages))[:8192])
    assert len(cases[0].input) > 8192 and "truncated" in cases[0].input[8192:]
    with pytest.raises(json.JSONDecodeError):
        json.loads(cases[0].input)
    assert results[0].input == cases[0].input


async def test_redacted_payloads_replace_media_and_strip_url_queries() -> None:
    conv = [
        user_turn(
            "look",
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            named_image("x.png?signature=secret"),
        )
    ]
    case, _ = await _evaluate(conv, "redacted")
    assert PNG not in case.input and "secret" not in case.input
    data = json.loads(case.input)
    blocks = data[0]["content"]
    assert blocks[0] == text_block("look")
    digest = hashlib.sha256(base64.b64decode(PNG)).hexdigest()
    expected = {"media_type": "image/png", "bytes": PNG_BYTES, "sha256": digest}
    # the payload (the source, or its data) is replaced by the media summary
    source = blocks[1]["source"]
    assert (
        source == expected
        or source.get("data") == expected
        or ({k: source.get(k) for k in expected} == expected)
    )
    assert blocks[2]["source"]["url"] == "https://example.com/x.png"

    secret_url = "https://example.com/clip.mp4?sig=SECRET"
    video = {
        "type": "video",
        "source": {"type": "url", "media_type": "video/mp4", "url": secret_url},
    }
    case = await evaluated_case([user_turn("look", png_block(), video)], "redacted")
    assert REFERENCE_PNG not in case.input and "SECRET" not in case.input
    payload = json.loads(case.input)
    image_source = payload[0]["content"][1]["source"]
    raw = base64.b64decode(REFERENCE_PNG)
    assert {
        "media_type": "image/png",
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }.items() <= _flat(image_source).items()
    assert "example.com/clip.mp4" in case.input


async def test_evaluation_output_is_the_run_output_in_every_mode() -> None:
    for mode in ("none", "full", "redacted"):
        case, _ = await _evaluate("hi", mode, output="same output")
        assert case.output == "same output"


async def test_redacted_payloads_drop_credentials() -> None:
    secret = "sk-ant-" + "a1B2c3D4" * 4
    case, _ = await _evaluate([user_turn(f"my key is {secret}")], "redacted")
    assert secret not in case.input
    assert "my key is" in case.input


async def test_what_is_stored_follows_the_payload_policy() -> None:
    stored: list[Any] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: Any) -> None:
            stored.append(result)

    for mode in ("none", "redacted"):
        oma = OpenMultiAgent(
            evaluation=OnlineEvaluationConfig(scorers=[lambda c: 1.0], store_payloads=mode),
            plugins=builtin_host(Sink()),
        )
        text = "see https://example.com/doc?token=abc123secret now"
        await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["answer"])), text)
        await oma.evaluation.flush()
    none, redacted = stored
    assert "answer" not in none.output and "omitted" in none.output
    assert "abc123secret" not in redacted.input
    assert "https://example.com/doc" in redacted.input

    stored: list[Any] = []
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(
            scorers=[collecting_scorer(cases)], store_payloads="none", on_result=stored.append
        ),
        plugins=builtin_host(),
    )
    result = await oma.run_agent(AgentConfig(name="v"), reference_conversation())
    await oma.evaluation.flush()
    (record,) = stored
    assert record.input == "[array input omitted; 3 items]"
    assert "Keep answers concise" not in record.output and REFERENCE_PNG not in record.output
    assert cases[0].output == result.output  # the scorer itself saw the real output
    assert oma.evaluation.stats().sampled == 1 and oma.evaluation.stats().scored == 1


def test_an_unknown_store_payloads_policy_is_refused() -> None:
    with pytest.raises(ValueError):
        OnlineEvaluationConfig(store_payloads="everything")  # type: ignore[arg-type]


async def test_string_input_under_full_is_the_json_string() -> None:
    cases: list[EvalCase] = []
    oma = make_orchestrator(
        evaluation=OnlineEvaluationConfig([lambda c: cases.append(c) or 1.0], store_payloads="full")
    )
    await oma.run_agent(agent_config(ScriptedProvider(["ok"])), "twelve chars")
    await oma.evaluation.flush()
    assert json.loads(cases[0].input) == "twelve chars"


@pytest.mark.parametrize("bad", ["all", "", None, "NONE", 1])
def test_unknown_store_payloads_is_refused_when_the_config_is_built(bad: Any) -> None:
    with pytest.raises(ValueError, match="store_payloads"):
        OnlineEvaluationConfig(scorers=[], store_payloads=bad)
