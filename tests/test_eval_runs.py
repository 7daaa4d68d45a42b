"""``evaluate``: every case on every config, scored, priced, timed, bounded by ``max_cost``;
a failing provider fails its own cases only. Against scripted providers: each reply is known,
so each figure of the report is exactly what those replies imply."""

from __future__ import annotations

import asyncio
import base64
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _builders import ROOT, builtin_host

from oma_core import AgentConfig, ProviderError
from oma_core.budgets import CostContext
from oma_core.evaluation import (
    Dataset,
    DatasetCase,
    OfflineCase,
    Score,
    contains,
    evaluate,
    exact,
    judge,
)
from oma_core.messages import DocumentBlock, ImageBlock
from oma_core.providers import Usage
from oma_core.testing import ScriptedProvider


def price(usage: Usage, context: CostContext) -> float:
    """A dollar per thousand input tokens, two per thousand output tokens."""
    return (usage.input_tokens + 2 * usage.output_tokens) / 1000


def ticking(*times: float) -> Callable[[], float]:
    """A clock that reads ``times`` in turn: a run's latency is the difference of two reads."""
    reads: Iterator[float] = iter(times)
    return lambda: next(reads)


@pytest.fixture
def media_dataset(tmp_path: Path) -> Dataset:
    shutil.copy(ROOT / "examples" / "cat.png", tmp_path / "cat.png")
    shutil.copy(ROOT / "examples" / "report.pdf", tmp_path / "report.pdf")
    (tmp_path / "cases.yaml").write_text(
        """
cases:
  - name: hello
    input: Say hello.
    expected: hello
  - name: cat
    input:
      - role: user
        content:
          - {type: text, text: "What is this?"}
          - {type: image, path: cat.png}
    expected: cat
  - name: pdf
    input:
      - role: user
        content:
          - {type: text, text: "When do we ship?"}
          - {type: document, path: report.pdf}
    expected: Friday
""",
        encoding="utf-8",
    )
    return Dataset.load(tmp_path / "cases.yaml")


async def direct_usage(dataset: Dataset, replies: list[str]) -> list[Usage]:
    """The usage of each case's run made directly on a scripted provider with ``replies``."""
    from oma_core import Agent

    provider = ScriptedProvider(replies)
    agent = Agent(AgentConfig("direct", provider=provider), plugins=builtin_host())
    return [(await agent.run(case.input)).usage for case in dataset.cases]


async def test_two_configs_on_media_cases_give_the_figures_their_replies_imply(
    media_dataset: Dataset,
) -> None:
    good = ["hello there", "a cat", "on Friday"]
    poor = ["hello", "a dog", "soon"]
    configs = [
        AgentConfig("good", provider=ScriptedProvider(good)),
        AgentConfig("poor", provider=ScriptedProvider(poor)),
    ]
    report = await evaluate(
        media_dataset,
        configs,
        [exact, contains],
        concurrency=1,
        estimate_cost=price,
        plugins=builtin_host(),
        clock=ticking(0, 1, 1, 2, 2, 4, 4, 7, 7, 12, 12, 18),
    )
    assert [(c.case, c.config) for c in report.cases] == [
        ("hello", "good"),
        ("hello", "poor"),
        ("cat", "good"),
        ("cat", "poor"),
        ("pdf", "good"),
        ("pdf", "poor"),
    ]
    outputs = ["hello there", "hello", "a cat", "a dog", "on Friday", "soon"]
    assert [c.output for c in report.cases] == outputs
    usages = {
        "good": await direct_usage(media_dataset, good),
        "poor": await direct_usage(media_dataset, poor),
    }
    for result in report.cases:
        usage = usages[result.config][[c.name for c in media_dataset.cases].index(result.case)]
        assert result.usage == usage
        assert result.cost == price(usage, CostContext(result.config, "scripted", None, None))
    rows = {(r["config"], r["scorer"]): r for r in report.summary()}
    assert rows["good", "contains"] | {"cost": None} == {
        "config": "good",
        "scorer": "contains",
        "n": 3,
        "mean": 1.0,
        "p50": 1.0,
        "p95": 1.0,
        "pass_rate": 1.0,
        "cost": None,
        "latency_p50": 2.0,  # the good runs took 1, 2 and 5 ticks
        "latency_p95": pytest.approx(4.7),  # 2 + (5 - 2) * 0.9
    }
    assert rows["good", "exact"]["mean"] == 0.0  # "hello there" is not "hello"
    assert rows["poor", "exact"]["mean"] == pytest.approx(1 / 3)
    assert rows["poor", "contains"]["pass_rate"] == pytest.approx(1 / 3)
    assert rows["poor", "contains"]["latency_p50"] == 3.0  # 1, 3 and 6 ticks
    good_cost = sum(r.cost or 0 for r in report.cases if r.config == "good")
    assert rows["good", "exact"]["cost"] == pytest.approx(good_cost)
    assert report.spent == pytest.approx(sum(r.cost or 0 for r in report.cases))
    assert not report.stopped and not report.not_run


async def test_media_read_from_paths_reach_the_provider_as_the_files_bytes(
    media_dataset: Dataset,
) -> None:
    provider = ScriptedProvider(["a", "b", "c"])
    await evaluate(
        media_dataset, AgentConfig("one", provider=provider), [], concurrency=1,
        plugins=builtin_host(),
    )  # fmt: skip
    image = provider.requests[1].messages[0].content[1]
    document = provider.requests[2].messages[0].content[1]
    assert isinstance(image, ImageBlock) and isinstance(document, DocumentBlock)
    cat = (ROOT / "examples" / "cat.png").read_bytes()
    assert base64.b64decode(image.source.data) == cat  # type: ignore[union-attr]
    assert document.source.media_type == "application/pdf"
    assert document.filename == "report.pdf"


async def test_max_cost_stops_starting_cases_and_the_report_says_what_was_left() -> None:
    dataset = Dataset([DatasetCase(f"c{i}", f"question {i}", expected="x") for i in range(6)])
    provider = ScriptedProvider(["x"] * 6)
    report = await evaluate(
        dataset,
        AgentConfig("a", provider=provider),
        [exact],
        concurrency=1,
        max_cost=0.005,  # each run costs 3 input and 1 output tokens: $0.005
        estimate_cost=price,
        plugins=builtin_host(),
    )
    ran = [c for c in report.cases if c.status == "ok"]
    assert len(ran) == 1 and ran[0].cost == pytest.approx(0.005)
    assert [c.case for c in report.not_run] == ["c1", "c2", "c3", "c4", "c5"]
    assert report.stopped and report.spent == pytest.approx(0.005)
    assert len(provider.requests) == 1  # nothing was sent for the cases not run
    assert all(c.output is None and not c.scores for c in report.not_run)
    assert report.summary()[0]["n"] == 1


async def test_a_failing_provider_marks_its_own_cases_and_the_rest_complete() -> None:
    dataset = Dataset([DatasetCase(f"c{i}", f"q{i}", expected="ok") for i in range(3)])
    broken = ProviderError("the service is down", provider="Broken", retryable=False)
    configs = [
        AgentConfig("fine", provider=ScriptedProvider(["ok"] * 3)),
        AgentConfig("flaky", provider=ScriptedProvider(["ok", broken, "ok"])),
    ]
    report = await evaluate(dataset, configs, [exact], concurrency=2, plugins=builtin_host())
    fine = [c for c in report.cases if c.config == "fine"]
    flaky = {c.case: c for c in report.cases if c.config == "flaky"}
    assert all(c.status == "ok" and c.scores["exact"] == Score(1.0) for c in fine)
    failed = [c for c in flaky.values() if c.status != "ok"]
    assert len(failed) == 1
    assert failed[0].status == "error" and "the service is down" in (failed[0].error or "")
    assert not failed[0].scores
    assert sum(c.status == "ok" for c in flaky.values()) == 2
    rows = {r["config"]: r for r in report.summary()}
    assert rows["flaky"]["n"] == 2 and rows["fine"]["n"] == 3


async def test_each_run_s_retries_are_counted() -> None:
    transient = ProviderError("busy", provider="Flaky", retryable=True, status_code=503)
    provider = ScriptedProvider([transient, transient, "ok", "ok"])
    config = AgentConfig("a", provider=provider, retry_delay=0, max_retries=3)
    dataset = Dataset([DatasetCase("first", "q1"), DatasetCase("second", "q2")])
    report = await evaluate(dataset, config, [], concurrency=1, plugins=builtin_host())
    assert [c.retries for c in report.cases] == [2, 0]
    assert all(c.status == "ok" for c in report.cases)


async def test_at_most_concurrency_runs_are_in_flight() -> None:
    from _waiting import until

    from oma_core.capabilities import Capabilities
    from oma_core.messages import LLMMessage, TextBlock
    from oma_core.providers import ProviderResponse

    in_flight: list[int] = []
    gate = asyncio.Event()

    class Gated:
        """Holds every call until the gate opens."""

        name = display_name = "gated"
        capabilities = Capabilities.everything()

        async def complete(self, request: Any) -> ProviderResponse:
            in_flight.append(1)
            await gate.wait()
            reply = LLMMessage(role="assistant", content=(TextBlock("r"),))
            return ProviderResponse(reply, Usage(1, 1), stop_reason="end_turn")

    dataset = Dataset([DatasetCase(f"c{i}", f"q{i}") for i in range(8)])
    config = AgentConfig("a", provider=Gated())
    task = asyncio.ensure_future(
        evaluate(dataset, config, [], concurrency=3, plugins=builtin_host())
    )
    await until(lambda: len(in_flight) == 3)
    for _ in range(20):  # let any run that could start do so
        await asyncio.sleep(0)
    assert len(in_flight) == 3  # the fourth waits for a free slot
    gate.set()
    report = await task
    assert len(in_flight) == 8
    assert len(report.cases) == 8 and all(c.status == "ok" for c in report.cases)


async def test_an_online_scorer_works_unchanged_and_a_failing_scorer_is_recorded() -> None:
    seen: list[Any] = []

    def online(case: Any) -> float:  # written for online evaluation: an EvalCase in
        seen.append(case)
        return 0.5 if "x" in case.output else 0.0

    async def broken(case: Any) -> float:
        raise RuntimeError("scorer bug")

    dataset = Dataset([DatasetCase("one", "q", expected="x", metadata={"k": 1})])
    config = AgentConfig("a", provider=ScriptedProvider(["x"]))
    report = await evaluate(
        dataset, config, {"online": online, "broken": broken}, plugins=builtin_host()
    )
    (result,) = report.cases
    assert result.scores == {"online": Score(0.5)}
    assert result.score_errors == {"broken": "RuntimeError: scorer bug"}
    (case,) = seen
    assert isinstance(case, OfflineCase)
    assert (case.input, case.output, case.name, case.expected, case.config) == (
        "q",
        "x",
        "one",
        "x",
        "a",
    )
    assert case.metadata == {"k": 1} and case.status == "ok" and case.agent == "a"


async def test_a_judge_is_charged_to_the_case_and_to_max_cost() -> None:
    verdict = '{"score": 0.75, "reasons": ["close enough"]}'
    grader = judge(
        AgentConfig("grader", provider=ScriptedProvider([verdict, verdict])),
        "Is it polite?",
        plugins=builtin_host(),
    )
    dataset = Dataset([DatasetCase("one", "q1"), DatasetCase("two", "q2")])
    report = await evaluate(
        dataset,
        AgentConfig("a", provider=ScriptedProvider(["yes", "no"])),
        [grader],
        concurrency=1,
        estimate_cost=price,
        pass_marks={"judge_grader": 0.7},
        plugins=builtin_host(),
    )
    assert [c.scores["judge_grader"] for c in report.cases] == [Score(0.75, "close enough")] * 2
    judged = [c.judge_cost for c in report.cases]
    assert all(cost is not None and cost > 0 for cost in judged)
    runs = [c.cost or 0 for c in report.cases]
    assert report.spent == pytest.approx(sum(runs) + sum(j or 0 for j in judged))
    assert report.summary()[0]["pass_rate"] == 1.0  # 0.75 passes a mark of 0.7


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"configs": []}, ValueError),
        ({"configs": [AgentConfig("a"), AgentConfig("a")]}, ValueError),
        ({"concurrency": 0}, ValueError),
        ({"max_cost": 1.0}, ValueError),  # no price
        ({"max_cost": -1.0, "estimate_cost": price}, ValueError),
        ({"configs": ["echo"]}, TypeError),
    ],
)
async def test_bad_arguments_are_refused_before_any_run(
    arguments: dict[str, Any], error: type[Exception]
) -> None:
    provider = ScriptedProvider(["never"])
    call: dict[str, Any] = {"configs": [AgentConfig("a", provider=provider)], **arguments}
    with pytest.raises(error):
        await evaluate(Dataset([DatasetCase("c", "q")]), scorers=[], **call)
    assert not provider.requests
