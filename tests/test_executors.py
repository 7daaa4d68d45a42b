"""Executors are plugins: registration, selection, the checks at construction, and the
conformance suite on the built-in local executor."""

from __future__ import annotations

import pickle
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from oma_core import (
    AgentConfig,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    RunResult,
    TaskSpec,
    Team,
    hookimpl,
)
from oma_core.errors import PluginError, WorkerLostError
from oma_core.testing.executors import ExecutorConformance
from oma_core.toolkit import ExecutionContext, ExecutorSpec, TaskRun, TaskRunner


class TestLocalExecutorConformance(ExecutorConformance):
    executor_name = "local"


class _Recording:
    """An executor that runs every attempt locally and records what it was asked to run."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)
        self.runs: list[TaskRun] = []
        self.sessions = 0

    @asynccontextmanager
    async def session(self, context: ExecutionContext) -> AsyncIterator[TaskRunner]:
        self.sessions += 1

        async def run(attempt: TaskRun) -> RunResult:
            self.runs.append(attempt)
            return await context.run_local(attempt)

        yield run


def _host(*specs: ExecutorSpec) -> PluginHost:
    class Plugin:
        @hookimpl
        def oma_register_executors(self) -> list[ExecutorSpec]:
            return list(specs)

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="executors")
    return host


RECORDING = ExecutorSpec("recording", _Recording, supports={"progress"})


def test_the_local_executor_is_built_in() -> None:
    host = PluginHost(load_entrypoints=False)
    assert "local" in host.executor_specs()
    (info,) = [i for i in host.plugin_info() if i.name.endswith("local_executor")]
    assert info.builtin and info.executors == ("local",)


def test_an_unknown_executor_is_refused_at_construction_with_a_suggestion() -> None:
    with pytest.raises(
        PluginError, match=r"unknown executor 'recordin' \(did you mean 'recording'"
    ):
        OpenMultiAgent(plugins=_host(RECORDING), executor="recordin")


def test_a_factory_whose_product_has_no_session_names_its_plugin() -> None:
    spec = ExecutorSpec("broken", lambda options: object())
    with pytest.raises(PluginError, match=r"plugin 'executors'.*executor 'broken'.*no session"):
        OpenMultiAgent(plugins=_host(spec), executor="broken")


def test_a_spec_with_unknown_features_fails_the_plugin_when_it_loads() -> None:
    spec = ExecutorSpec("odd", _Recording, supports={"teleport"})
    with pytest.raises(PluginError, match="unknown features \\(teleport\\)"):
        _host(spec)


def test_an_executor_without_evaluation_refuses_an_evaluating_orchestrator() -> None:
    evaluation = OnlineEvaluationConfig(scorers=[lambda case: 1.0])
    with pytest.raises(PluginError, match="does not support online evaluation"):
        OpenMultiAgent(evaluation=evaluation, plugins=_host(RECORDING), executor="recording")


def test_the_local_executor_takes_no_options() -> None:
    with pytest.raises(PluginError, match="takes no executor_options"):
        OpenMultiAgent(plugins=PluginHost(load_entrypoints=False), executor_options={"x": 1})


async def test_the_chosen_executor_runs_every_attempt_with_its_number() -> None:
    host = _host(RECORDING)
    oma = OpenMultiAgent(plugins=host, executor="recording", executor_options={"k": "v"})
    team = Team("t", [AgentConfig("a", provider="scripted", provider_options={"responses": []})])
    tasks = [TaskSpec("x", "Do x.", max_retries=1)]
    outcome = await oma.run_tasks(team, tasks)
    executor = oma._executors["recording"]
    assert isinstance(executor, _Recording) and executor.options == {"k": "v"}
    # the exhausted scripted queue fails the run with a non-retryable error: one attempt
    assert [(r.task, r.attempt, r.prompt) for r in executor.runs] == [("x", 1, "Do x.")]
    assert outcome.tasks["x"].attempts == 1


async def test_an_executor_named_per_call_wins_over_the_default() -> None:
    host = _host(RECORDING)
    oma = OpenMultiAgent(plugins=host)
    team = Team("t", [AgentConfig("a")])
    outcome = await oma.run_tasks(team, [TaskSpec("x", "Do x.")], executor="recording")
    assert outcome.success
    executor = oma._executors["recording"]
    assert isinstance(executor, _Recording) and [r.task for r in executor.runs] == ["x"]
    await oma.run_tasks(team, [TaskSpec("y", "Do y.")])  # the default: local
    assert [r.task for r in executor.runs] == ["x"]


async def test_run_team_runs_the_coordinator_here_and_the_tasks_on_the_executor() -> None:
    host = _host(RECORDING)
    oma = OpenMultiAgent(plugins=host, executor="recording")
    plan = '{"tasks": [{"title": "t1", "description": "Do it.", "assignee": null}]}'
    coordinator = AgentConfig(
        "boss", provider="scripted", provider_options={"responses": [plan, "All done."]}
    )
    outcome = await oma.run_team(Team("t", [AgentConfig("a")]), "Goal", coordinator=coordinator)
    assert outcome.success and outcome.output == "All done."
    executor = oma._executors["recording"]
    assert isinstance(executor, _Recording) and [r.task for r in executor.runs] == ["t1"]


def test_a_lost_worker_is_retryable_and_pickles_with_its_fields() -> None:
    error = WorkerLostError("the worker died", executor="ray", worker="pid 42")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is WorkerLostError and str(copy) == "the worker died"
    assert vars(copy) == {"executor": "ray", "worker": "pid 42"}
    assert copy.retryable is True and copy.code == "WORKER_LOST" and copy.status == "error"
