"""The team task graph runner: which task runs when, which is retried, what a team run costs.

Most tests drive ``oma_core.teams.run_tasks`` through its interface with the orchestrator (a
``run_agent`` and an ``emit`` callable), so a plan's shape and each task's outcome can be
chosen freely; the tests marked "end to end" go through ``OpenMultiAgent`` and real agents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import (
    AgentConfig,
    BudgetExceededError,
    InvalidMessageError,
    LLMMessage,
    OpenMultiAgent,
    ProgressEvent,
    ProviderError,
    RunResult,
    RunStatus,
    TaskSpec,
    Team,
    TextBlock,
    ToolUseBlock,
    UnsupportedContentBlockError,
    Usage,
    tool,
)
from oma_core.capabilities import Capabilities
from oma_core.errors import (
    BackendError,
    HookError,
    MaxTurnsExceededError,
    PlanError,
    RunTimeoutError,
)
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse
from oma_core.teams import TeamRunResult, check_plan, run_tasks
from oma_core.testing import Delayed, ScriptedProvider

TEAM = Team("t", [AgentConfig("a"), AgentConfig("b")])

Event = tuple[str, str | None]


OK_USAGE, FAILED_USAGE = Usage(3, 1), Usage(2, 0)


def _ok(output: str = "done", usage: Usage = OK_USAGE) -> RunResult:
    return RunResult(True, output, [], usage)


def _failed(error: BaseException, usage: Usage = FAILED_USAGE) -> RunResult:
    return RunResult(False, "", [], usage, RunStatus("error", error))


class _Runner:
    """A ``run_agent`` and an ``emit`` for ``run_tasks``: scripted outcomes, recorded calls.

    ``outcomes[title]`` lists the results of that task's attempts in order (the last one
    repeats; default: success); ``yields[title]`` is how often the call gives way to the
    loop first, so tasks finish in a chosen interleaving.
    """

    def __init__(
        self,
        outcomes: Mapping[str, list[RunResult | BaseException]] | None = None,
        yields: Mapping[str, int] | None = None,
    ) -> None:
        self.outcomes = {title: list(results) for title, results in (outcomes or {}).items()}
        self.yields = dict(yields or {})
        self.events: list[Event] = []
        self.data: list[dict[str, Any]] = []
        self.calls: list[tuple[str, str, str]] = []
        self.now = 0
        self.peak = 0

    async def run_agent(self, config: AgentConfig, prompt: str, task: str | None) -> RunResult:
        assert task is not None
        self.calls.append((config.name, task, prompt))
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            for _ in range(self.yields.get(task, 0)):
                await asyncio.sleep(0)
        finally:
            self.now -= 1
        script = self.outcomes.get(task) or [_ok(f"output of {task}")]
        outcome = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def emit(
        self, kind: str, agent: str | None, task: str | None, data: dict[str, Any]
    ) -> None:
        self.events.append((kind, task))
        self.data.append(data)

    async def run(self, tasks: Iterable[TaskSpec], team: Team = TEAM) -> TeamRunResult:
        return await run_tasks(team, tasks, run_agent=self.run_agent, emit=self.emit)

    def of(self, kind: str) -> list[str | None]:
        return [task for event, task in self.events if event == kind]


def _chain(n: int) -> list[TaskSpec]:
    return [TaskSpec("0", "d")] + [
        TaskSpec(str(i), "d", depends_on=str(i - 1)) for i in range(1, n)
    ]


# -- retries: only what a second attempt could change ---------------------------------------

NOT_RETRYABLE: list[BaseException] = [
    UnsupportedContentBlockError("Text Only", "image"),
    ProviderError("bad request", status_code=400),
    ProviderError("unauthorised", status_code=401),
    ProviderError("sent a malformed response", retryable=False),
    InvalidMessageError("messages[0].content", "must not be empty"),
    PlanError("no plan"),
    BudgetExceededError("tokens", 100, 120),
    RunTimeoutError("run", 30.0),
    MaxTurnsExceededError(10),
    HookError("the hook raised"),
    BackendError("the agent exited", exit_code=2),
    RuntimeError("not an OmaError"),
]

RETRYABLE: list[BaseException] = [
    ProviderError("busy", status_code=503),
    ProviderError("slow down", status_code=429),
    ProviderError("connection reset", retryable=True),
    RunTimeoutError("call", 5.0),
    BackendError("the agent crashed", retryable=True),
]


@pytest.mark.parametrize("error", NOT_RETRYABLE, ids=lambda e: f"{type(e).__name__}-{e}")
async def test_a_task_whose_error_is_not_retryable_runs_once(error: BaseException) -> None:
    runner = _Runner({"job": [_failed(error), _ok()]})
    outcome = await runner.run([TaskSpec("job", "d", max_retries=3)])
    record = outcome.tasks["job"]
    assert (record.status, record.attempts, record.error) == ("failed", 1, error)
    assert len(runner.calls) == 1
    assert runner.of("task_retry") == []
    assert runner.of("task_failed") == ["job"]


@pytest.mark.parametrize("error", RETRYABLE, ids=lambda e: f"{type(e).__name__}-{e}")
async def test_a_task_whose_error_is_retryable_runs_again(error: BaseException) -> None:
    runner = _Runner({"job": [_failed(error), _failed(error), _ok("third time")]})
    outcome = await runner.run([TaskSpec("job", "d", max_retries=2)])
    record = outcome.tasks["job"]
    assert (record.status, record.attempts, record.output) == ("completed", 3, "third time")
    assert runner.of("task_retry") == ["job", "job"]
    retries = [
        d for (kind, _), d in zip(runner.events, runner.data, strict=True) if kind == "task_retry"
    ]
    assert retries == [{"attempt": 2, "error": error}, {"attempt": 3, "error": error}]


async def test_a_retryable_error_fails_the_task_once_its_retries_are_used() -> None:
    error = ProviderError("busy", status_code=503)
    runner = _Runner({"job": [_failed(error)]})
    outcome = await runner.run([TaskSpec("job", "d", max_retries=2)])
    assert (outcome.tasks["job"].status, outcome.tasks["job"].attempts) == ("failed", 3)
    assert len(runner.calls) == 3


async def test_a_retry_stops_at_the_first_error_that_is_not_retryable() -> None:
    busy, bad = ProviderError("busy", status_code=503), ProviderError("bad", status_code=400)
    runner = _Runner({"job": [_failed(busy), _failed(bad), _ok()]})
    outcome = await runner.run([TaskSpec("job", "d", max_retries=5)])
    assert (outcome.tasks["job"].attempts, outcome.tasks["job"].error) == (2, bad)


async def test_every_attempts_tokens_count_failed_ones_included() -> None:
    busy = ProviderError("busy", status_code=503)
    runner = _Runner(
        {
            "job": [_failed(busy, Usage(7, 3)), _failed(busy, Usage(5, 2)), _ok("ok", Usage(4, 1))],
            "other": [_failed(ProviderError("bad", status_code=400), Usage(6, 0))],
        }
    )
    outcome = await runner.run([TaskSpec("job", "d", max_retries=2), TaskSpec("other", "d")])
    job = outcome.tasks["job"]
    assert job.result is not None and job.result.usage == Usage(4, 1)  # the last attempt
    assert job.usage == Usage(16, 6)
    assert outcome.tasks["other"].usage == Usage(6, 0)
    assert outcome.usage == Usage(22, 6)


# -- retries, end to end --------------------------------------------------------------------


def _oma(events: list[ProgressEvent] | None = None, **options: Any) -> OpenMultiAgent:
    on_progress = events.append if events is not None else None
    return OpenMultiAgent(
        on_progress=on_progress, plugins=PluginHost(load_entrypoints=False), **options
    )


async def test_end_to_end_a_block_the_provider_cannot_carry_is_not_retried() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    image = {
        "type": "image",
        "source": {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"},
    }

    def add_image(ctx: Any) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, image]}]}

    team = Team("t", [AgentConfig("a", provider=provider, before_run=add_image)])
    outcome = await _oma().run_tasks(team, [TaskSpec("job", "Look.", max_retries=2)])
    assert outcome.tasks["job"].attempts == 1
    assert isinstance(outcome.tasks["job"].error, UnsupportedContentBlockError)
    assert provider.requests == []


async def test_end_to_end_a_400_is_not_retried_and_a_503_is() -> None:
    provider = ScriptedProvider(
        [
            ProviderError("bad", status_code=400),
            ProviderError("busy", status_code=503),
            "ok",
            "never",
        ]
    )
    team = Team("t", [AgentConfig("a", provider=provider, max_retries=0)], max_concurrency=1)
    tasks = [TaskSpec("bad", "B.", max_retries=2), TaskSpec("busy", "C.", max_retries=2)]
    outcome = await _oma().run_tasks(team, tasks)
    assert (outcome.tasks["bad"].status, outcome.tasks["bad"].attempts) == ("failed", 1)
    assert (outcome.tasks["busy"].status, outcome.tasks["busy"].attempts) == ("completed", 2)
    assert len(provider.requests) == 3


async def test_end_to_end_a_spent_budget_is_not_retried() -> None:
    provider = ScriptedProvider(["a long answer " * 20, "never"])
    team = Team("t", [AgentConfig("a", provider=provider)])
    outcome = await _oma(max_token_budget=5).run_tasks(team, [TaskSpec("job", "D.", max_retries=2)])
    record = outcome.tasks["job"]
    assert record.result is not None and record.result.status.code == "budget_exhausted"
    assert (record.status, record.attempts) == ("failed", 1)
    assert len(provider.requests) == 1


async def test_end_to_end_a_run_timeout_is_not_retried_and_a_call_timeout_is() -> None:
    slow = ScriptedProvider([Delayed(30, "late"), "never"])
    team = Team("t", [AgentConfig("a", provider=slow)])
    outcome = await _oma(timeout=0.05).run_tasks(team, [TaskSpec("job", "D.", max_retries=2)])
    assert (outcome.tasks["job"].attempts, len(slow.requests)) == (1, 1)
    assert isinstance(outcome.tasks["job"].error, RunTimeoutError)

    slow = ScriptedProvider([Delayed(30, "late"), "in time"])
    team = Team("t", [AgentConfig("a", provider=slow, max_retries=0)])
    outcome = await _oma(call_timeout=0.05).run_tasks(team, [TaskSpec("job", "D.", max_retries=1)])
    assert (outcome.tasks["job"].status, outcome.tasks["job"].attempts) == ("completed", 2)
    assert outcome.tasks["job"].output == "in time"


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


class _Metered:
    """Plays a script of assistant messages and errors; every answer costs Usage(10, 1)."""

    name = "metered"

    def __init__(self, script: list[LLMMessage | BaseException]) -> None:
        self.script = script

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        calls = any(isinstance(b, ToolUseBlock) for b in item.content)
        return ProviderResponse(item, Usage(10, 1), "tool_use" if calls else "end_turn")


async def test_end_to_end_the_team_usage_counts_the_tokens_of_a_failed_attempt() -> None:
    call = LLMMessage("assistant", (ToolUseBlock("c1", "ping", {}),))
    answer = LLMMessage("assistant", (TextBlock("done"),))
    provider = _Metered([call, ProviderError("busy", status_code=503), call, answer])
    team = Team("t", [AgentConfig("a", provider=provider, tools=[ping], max_retries=0)])
    outcome = await _oma().run_tasks(team, [TaskSpec("job", "Ping.", max_retries=1)])
    record = outcome.tasks["job"]
    assert record.status == "completed" and record.attempts == 2
    assert record.result is not None and record.result.usage == Usage(20, 2)
    assert record.usage == outcome.usage == Usage(30, 3)


async def test_end_to_end_a_task_retry_event_carries_the_error_redacted() -> None:
    key = "sk-ant-api03-" + "K" * 30
    events: list[ProgressEvent] = []
    provider = ScriptedProvider([ProviderError(f"busy {key}", status_code=503), "ok"])
    team = Team("t", [AgentConfig("a", provider=provider, max_retries=0)])
    outcome = await _oma(events).run_tasks(team, [TaskSpec("job", "D.", max_retries=1)])
    assert outcome.success
    (retry,) = [e for e in events if e.type == "task_retry"]
    assert retry.data["attempt"] == 2 and isinstance(retry.data["error"], ProviderError)
    assert key not in str(retry.data["error"])


# -- scheduling -----------------------------------------------------------------------------


async def test_ready_tasks_start_in_plan_order() -> None:
    runner = _Runner()
    tasks = [
        TaskSpec("late", "d", depends_on="first"),
        TaskSpec("first", "d"),
        TaskSpec("x", "d"),
        TaskSpec("y", "d"),
    ]
    await runner.run(tasks, Team("t", [AgentConfig("a")], max_concurrency=1))
    assert runner.of("task_start") == ["first", "late", "x", "y"]  # "late" is listed first


async def test_a_task_listed_before_a_failed_task_it_waits_for_is_skipped() -> None:
    runner = _Runner({"a": [_failed(ProviderError("bad", status_code=400))]})
    tasks = [
        TaskSpec("c", "d", depends_on="b"),
        TaskSpec("b", "d", depends_on="a"),
        TaskSpec("a", "d"),
    ]
    outcome = await runner.run(tasks)
    assert {t: r.status for t, r in outcome.tasks.items()} == {
        "c": "skipped",
        "b": "skipped",
        "a": "failed",
    }
    assert runner.of("task_skipped") == ["c", "b"]  # in plan order


async def test_a_failure_skips_a_long_chain_each_task_once_in_plan_order() -> None:
    runner = _Runner({"0": [_failed(ProviderError("bad", status_code=400))]})
    outcome = await runner.run(_chain(5_000))
    assert runner.of("task_skipped") == [str(i) for i in range(1, 5_000)]
    assert [t for _, t, _ in runner.calls] == ["0"]
    assert not outcome.success


async def test_a_dependent_with_a_failed_and_a_running_dependency_is_skipped_at_once() -> None:
    runner = _Runner(
        {"fails": [_failed(ProviderError("bad", status_code=400))]}, yields={"slow": 20}
    )
    tasks = [
        TaskSpec("slow", "d"),
        TaskSpec("fails", "d"),
        TaskSpec("both", "d", depends_on=["slow", "fails"]),
    ]
    outcome = await runner.run(tasks)
    order = [event for event in runner.events if event[0] != "task_start"]
    assert order == [("task_failed", "fails"), ("task_skipped", "both"), ("task_complete", "slow")]
    assert outcome.tasks["both"].status == "skipped"


async def test_a_task_sees_only_its_own_dependencies_outputs_in_their_order() -> None:
    runner = _Runner()
    tasks = [
        TaskSpec("one", "d"),
        TaskSpec("two", "d"),
        TaskSpec("three", "d"),
        TaskSpec("merge", "Merge them.", depends_on=["three", "one"]),
    ]
    await runner.run(tasks)
    prompt = next(p for _, t, p in runner.calls if t == "merge")
    assert prompt == (
        "Merge them.\n\nResults of the tasks this one depends on:\n\n"
        "## three\noutput of three\n\n## one\noutput of one"
    )


async def test_a_repeated_dependency_is_waited_for_once() -> None:
    runner = _Runner(yields={"a": 3})
    outcome = await runner.run([TaskSpec("a", "d"), TaskSpec("b", "d", depends_on=["a", "a"])])
    assert outcome.success
    assert runner.of("task_start") == ["a", "b"]


async def test_a_run_agent_that_raises_fails_its_task_and_the_rest_go_on() -> None:
    bug = KeyError("a bug in run_agent")
    runner = _Runner({"broken": [bug]})
    tasks = [
        TaskSpec("broken", "d"),
        TaskSpec("after", "d", depends_on="broken"),
        TaskSpec("fine", "d"),
    ]
    outcome = await runner.run(tasks)
    assert {t: r.status for t, r in outcome.tasks.items()} == {
        "broken": "failed",
        "after": "skipped",
        "fine": "completed",
    }
    assert outcome.tasks["broken"].error is bug


async def test_events_of_one_task_come_in_order_start_then_its_end() -> None:
    runner = _Runner()
    await runner.run(_chain(3))
    assert runner.events == [
        ("task_start", "0"),
        ("task_complete", "0"),
        ("task_start", "1"),
        ("task_complete", "1"),
        ("task_start", "2"),
        ("task_complete", "2"),
    ]


@st.composite
def _plans(draw: st.DrawFn) -> tuple[list[TaskSpec], set[str], dict[str, int], int]:
    """A random acyclic plan in a random order, with tasks that fail and calls that lag."""
    n = draw(st.integers(1, 12))
    titles = [f"t{i}" for i in range(n)]
    deps = [draw(st.lists(st.sampled_from(titles[:i]), max_size=3)) if i else [] for i in range(n)]
    order = draw(st.permutations(range(n)))
    tasks = [TaskSpec(titles[i], "d", depends_on=deps[i]) for i in order]
    fails = set(draw(st.lists(st.sampled_from(titles), max_size=n)))
    yields = {t: draw(st.integers(0, 3)) for t in titles}
    return tasks, fails, yields, draw(st.integers(1, 4))


def _expected(tasks: list[TaskSpec], fails: set[str]) -> dict[str, str]:
    """What each task must end as: a reference computed in dependency order."""
    by_title = {t.title: t for t in tasks}
    status: dict[str, str] = {}

    def settle(title: str) -> str:
        if title not in status:
            deps = [settle(d) for d in by_title[title].depends_on]
            if any(s != "completed" for s in deps):
                status[title] = "skipped"
            else:
                status[title] = "failed" if title in fails else "completed"
        return status[title]

    for task in tasks:
        settle(task.title)
    return status


@settings(max_examples=150, deadline=None)
@given(plan=_plans())
def test_any_plan_ends_with_every_task_settled_and_dependencies_respected(
    plan: tuple[list[TaskSpec], set[str], dict[str, int], int],
) -> None:
    tasks, fails, yields, limit = plan
    error = ProviderError("bad", status_code=400)
    runner = _Runner({t: [_failed(error, Usage(1, 0))] for t in fails}, yields)
    team = Team("t", [AgentConfig("a"), AgentConfig("b"), AgentConfig("c")], max_concurrency=limit)
    outcome = asyncio.run(runner.run(tasks, team))

    expected = _expected(tasks, fails)
    assert {t: r.status for t, r in outcome.tasks.items()} == expected
    assert list(outcome.tasks) == [t.title for t in tasks]
    assert outcome.success == all(s == "completed" for s in expected.values())
    ran = sorted(t for t, s in expected.items() if s != "skipped")
    assert sorted(t for _, t, _ in runner.calls) == ran
    assert sorted(t for t in runner.of("task_start") if t) == ran
    assert sorted(t for t in runner.of("task_skipped") if t) == sorted(
        t for t, s in expected.items() if s == "skipped"
    )
    assert runner.peak <= limit
    position = {event: index for index, event in enumerate(runner.events)}
    for task in tasks:
        if expected[task.title] != "skipped":
            for dep in task.depends_on:
                assert position[("task_complete", dep)] < position[("task_start", task.title)]
    completed = sum(1 for s in expected.values() if s == "completed")
    assert outcome.usage == Usage(3 * completed + len(ran) - completed, completed)


async def test_unassigned_tasks_go_to_the_agents_in_turn_by_plan_position() -> None:
    runner = _Runner()
    tasks = [TaskSpec("one", "d"), TaskSpec("two", "d", assignee="a"), TaskSpec("three", "d")]
    outcome = await runner.run(tasks)
    assert [r.assignee for r in outcome.tasks.values()] == ["a", "a", "a"]
    assert [name for name, _, _ in runner.calls] == ["a", "a", "a"]


# -- plans ------------------------------------------------------------------------------------


def test_a_cycle_names_its_own_tasks_not_those_waiting_for_it() -> None:
    plan = [
        TaskSpec("after", "d", depends_on=["b", "free"]),
        TaskSpec("a", "d", depends_on="c"),
        TaskSpec("b", "d", depends_on="a"),
        TaskSpec("c", "d", depends_on="b"),
        TaskSpec("free", "d"),
    ]
    with pytest.raises(PlanError) as caught:
        check_plan(TEAM, plan)
    reason = caught.value.reason
    assert reason.startswith("the dependencies of ['a', 'b', 'c'] form a cycle")
    assert "'a' -> 'c' -> 'b' -> 'a'" in reason
    assert "1 other task cannot run either" in reason
    assert "after" not in reason and "free" not in reason


def test_a_task_that_waits_for_itself_is_a_cycle() -> None:
    with pytest.raises(PlanError, match=r"\['x'\] form a cycle"):
        check_plan(TEAM, [TaskSpec("free", "d"), TaskSpec("x", "d", depends_on="x")])


def test_a_long_cycle_is_one_bounded_line_with_its_length_and_the_start_of_its_path() -> None:
    n = 10_000
    plan = [TaskSpec(f"t{i}", "d", depends_on=f"t{(i + 1) % n}") for i in range(n)]
    with pytest.raises(PlanError) as caught:
        check_plan(TEAM, plan)
    reason = caught.value.reason
    path = " -> ".join(f"'t{i}'" for i in range(10))
    assert reason == (
        f"the dependencies of 10,000 tasks form a cycle ({path} -> (9,990 more) -> 't0': "
        "each waits for the next)"
    )


def test_a_cycle_of_long_titles_shows_each_title_shortened() -> None:
    long_a, long_b = "a" * 100_000, "b" * 100_000
    plan = [TaskSpec(long_a, "d", depends_on=long_b), TaskSpec(long_b, "d", depends_on=long_a)]
    with pytest.raises(PlanError) as caught:
        check_plan(TEAM, plan)
    shown_a, shown_b = repr("a" * 37 + "..."), repr("b" * 37 + "...")
    assert caught.value.reason == (
        f"the dependencies of [{shown_a}, {shown_b}] form a cycle "
        f"({shown_a} -> {shown_b} -> {shown_a}: each waits for the next)"
    )


async def test_a_dependency_listed_twice_gives_its_output_once() -> None:
    runner = _Runner()
    await runner.run([TaskSpec("a", "d"), TaskSpec("b", "d", depends_on=["a", "a"])])
    (prompt,) = [prompt for _, title, prompt in runner.calls if title == "b"]
    assert prompt.count("## a") == 1


def test_of_two_cycles_the_first_in_plan_order_is_named() -> None:
    plan = [
        TaskSpec("p", "d", depends_on="q"),
        TaskSpec("q", "d", depends_on="p"),
        TaskSpec("x", "d", depends_on="y"),
        TaskSpec("y", "d", depends_on="x"),
    ]
    with pytest.raises(PlanError, match=r"\['p', 'q'\] form a cycle"):
        check_plan(TEAM, plan)


def test_a_valid_plan_comes_back_as_given() -> None:
    plan = [
        TaskSpec("b", "d", depends_on="a"),
        TaskSpec("a", "d"),
        TaskSpec("c", "d", assignee="b"),
    ]
    assert check_plan(TEAM, iter(plan)) == tuple(plan)


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        ([TaskSpec("a", "d"), "b"], "a task must be a TaskSpec, got str"),
        ([TaskSpec("", "d")], "a task has an empty title"),
        ([TaskSpec("a", "d", depends_on="a"), TaskSpec("a", "d")], "two tasks are titled 'a'"),
        ([TaskSpec("a", "d", depends_on="zz", assignee="zed")], "assigned to 'zed'"),
    ],
)
def test_what_cannot_run_is_refused_before_the_dependencies_are_looked_at(
    plan: list[Any], reason: str
) -> None:
    with pytest.raises(PlanError) as caught:
        check_plan(TEAM, plan)
    assert reason in caught.value.reason


def _shapes() -> dict[str, Callable[[int], list[TaskSpec]]]:
    def independent(n: int) -> list[TaskSpec]:
        return [TaskSpec(str(i), "d") for i in range(n)]

    def fan_in(n: int) -> list[TaskSpec]:
        parts = independent(n - 1)
        return [*parts, TaskSpec("merge", "d", depends_on=[t.title for t in parts])]

    return {"independent": independent, "chain": _chain, "fan-in": fan_in}


@pytest.mark.parametrize("shape", ["independent", "chain", "fan-in"])
async def test_a_plan_of_ten_thousand_tasks_runs_whole(shape: str) -> None:
    runner = _Runner()
    outcome = await runner.run(_shapes()[shape](10_000))
    assert outcome.success and len(runner.calls) == 10_000
    assert outcome.usage == Usage(30_000, 10_000)
