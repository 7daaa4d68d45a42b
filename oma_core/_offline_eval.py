"""Offline evaluation: every case of a dataset on every config, scored, into an ``EvalReport``.

``evaluate`` makes one run per case and config (each case on every config before the next
case, so that a stop at ``max_cost`` leaves the configs compared on the same cases), at most
``concurrency`` at once, each an ``Agent.run`` of the config's agent. A run that fails (a
provider error, a timeout) is that case's error, never the report's. Scorers score each run
that succeeded, in turn; one that raises or times out is recorded in ``score_errors``.

Cost: with ``estimate_cost`` every model call is priced (the runs' and the judges') and each
case's cost is what its calls were charged. ``max_cost`` is one ledger that every run and
every judge call is charged to: once it is spent, a run in flight stops after its call (the
budget middleware) and the cases not yet started are ``not_run``. So the whole evaluation,
judges included, overshoots the cap by at most one call per run in flight.
Latency is read from ``clock`` (a seam for tests: the figures come from it alone).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._datasets import Dataset, DatasetCase, input_json
from ._eval_report import CaseResult, EvalReport
from ._eval_scorers import OfflineCase
from ._eval_types import Score
from ._isolation import contained

if TYPE_CHECKING:
    from ._config import AgentConfig
    from .agent import Agent
    from .budgets import Budget, CostEstimator
    from .plugins import PluginHost

__all__ = ["evaluate"]

Scorers = Sequence[Callable[[Any], Any]] | Mapping[str, Callable[[Any], Any]]


async def evaluate(
    dataset: Dataset,
    configs: AgentConfig | Sequence[AgentConfig],
    scorers: Scorers | Callable[[Any], Any] = (),
    *,
    concurrency: int = 4,
    max_cost: float | None = None,
    estimate_cost: CostEstimator | None = None,
    pass_marks: Mapping[str, float] | None = None,
    scorer_timeout: float | None = 60.0,
    plugins: PluginHost | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> EvalReport:
    """Run every case of ``dataset`` on every config and score it: see the module docstring.

    ``configs`` are told apart by name (``AgentConfig.name``, unique). ``scorers`` is a list
    of scorers (named by their ``name`` or ``__name__``), a mapping of name to scorer, or
    one scorer; a scorer returning None does not score that case. ``pass_marks`` sets the
    score a scorer's case must reach to pass (1.0 by default). ``max_cost`` needs
    ``estimate_cost``. ``on_result`` is called with each ``CaseResult`` as it is made (a
    progress display). Bad arguments are ``ValueError``/``TypeError``, before any run.
    """
    from .agent import AgentConfig

    listed = [configs] if isinstance(configs, AgentConfig) else list(configs)
    named = _check(dataset, listed, concurrency, max_cost, estimate_cost)
    scoring = _named_scorers(scorers)
    marks = dict(pass_marks or {})
    run = _Evaluation(named, scoring, max_cost, estimate_cost, scorer_timeout, clock, on_result)
    jobs = [(case, config) for case in dataset.cases for config in listed]
    results: list[CaseResult | None] = [None] * len(jobs)
    await run.all(jobs, results, concurrency, plugins)
    done = [result for result in results if result is not None]
    spent = None if estimate_cost is None else math.fsum(run.spent)
    return EvalReport(
        dataset=dataset.name,
        configs=list(named),
        scorers=[name for name, _ in scoring],
        cases=done,
        pass_marks={name: marks.get(name, 1.0) for name, _ in scoring},
        spent=spent,
        max_cost=max_cost,
        stopped=run.stopped,
    )


def _check(
    dataset: Dataset,
    configs: list[AgentConfig],
    concurrency: int,
    max_cost: float | None,
    estimate_cost: CostEstimator | None,
) -> dict[str, AgentConfig]:
    from .agent import AgentConfig

    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a Dataset, got {type(dataset).__name__}")
    if not configs:
        raise ValueError("evaluate needs at least one AgentConfig")
    named: dict[str, AgentConfig] = {}
    for config in configs:
        if not isinstance(config, AgentConfig):
            raise TypeError(f"configs must be AgentConfigs, got {type(config).__name__}")
        if config.name in named:
            raise ValueError(f"two configs are named {config.name!r}: give each its own name")
        named[config.name] = config
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if max_cost is not None:
        if isinstance(max_cost, bool) or not isinstance(max_cost, int | float) or not max_cost >= 0:
            raise ValueError(f"max_cost must be a number >= 0 or None, got {max_cost!r}")
        if estimate_cost is None:
            raise ValueError("max_cost needs estimate_cost(usage, ctx) to price the calls")
    return named


def _named_scorers(scorers: Any) -> list[tuple[str, Callable[[Any], Any]]]:
    if isinstance(scorers, Mapping):
        pairs = list(scorers.items())
    else:
        listed = [scorers] if callable(scorers) else list(scorers)
        pairs = [(_name_of(scorer, i), scorer) for i, scorer in enumerate(listed)]
    seen: set[str] = set()
    for name, scorer in pairs:
        if not callable(scorer):
            raise TypeError(f"scorer {name!r} is not callable")
        if name in seen:
            raise ValueError(f"two scorers are named {name!r}: pass a mapping of names")
        seen.add(name)
    return pairs


def _name_of(scorer: Any, index: int) -> str:
    name = getattr(scorer, "name", None)
    if not isinstance(name, str) or not name:
        name = getattr(scorer, "__name__", None) or type(scorer).__name__
    return f"scorer_{index}" if name == "<lambda>" else str(name)


class _Evaluation:
    """One ``evaluate`` call's state: the shared cost ledger, what was spent, retries seen."""

    def __init__(
        self,
        configs: Mapping[str, AgentConfig],
        scorers: list[tuple[str, Callable[[Any], Any]]],
        max_cost: float | None,
        estimate_cost: CostEstimator | None,
        scorer_timeout: float | None,
        clock: Callable[[], float],
        on_result: Callable[[CaseResult], None] | None,
    ) -> None:
        from .budgets import Budget

        self.configs = configs
        self.scorers = scorers
        self.estimate_cost = estimate_cost
        self.cap = None if max_cost is None else Budget(max_cost=max_cost)
        self.scorer_timeout = scorer_timeout
        self.clock = clock
        self.on_result = on_result
        self.spent: list[float] = []
        self.stopped = False
        self.inputs: dict[int, tuple[Any, str]] = {}

    async def all(
        self,
        jobs: list[tuple[DatasetCase, AgentConfig]],
        results: list[CaseResult | None],
        concurrency: int,
        plugins: PluginHost | None,
    ) -> None:
        """Every job, ``concurrency`` at a time, each result at its job's index."""
        from .agent import Agent

        # Built first: an unknown provider or option is refused before anything is sent.
        agents = {
            name: Agent(config, plugins=plugins, close_after_run=True)
            for name, config in self.configs.items()
        }
        queue = iter(enumerate(jobs))

        async def worker() -> None:
            for index, (case, config) in queue:
                result = await self.one(agents[config.name], case, config)
                results[index] = result
                if self.on_result is not None:
                    self.on_result(result)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(jobs))):
                group.create_task(worker())

    def _input(self, case: DatasetCase) -> tuple[Any, str]:
        """The case's input as JSON data and as a scorer's text, made once per case."""
        kept = self.inputs.get(id(case))
        if kept is None:
            from ._payloads import build_payload

            value = case.input
            text = value if isinstance(value, str) else build_payload(value, "full")
            kept = (input_json(value), text)
            self.inputs[id(case)] = kept
        return kept

    async def one(self, agent: Agent, case: DatasetCase, config: AgentConfig) -> CaseResult:
        """One case on one config: run, time, price and score it."""
        from ._settings import RunSettings, new_run_id
        from .budgets import Budget

        data, text = self._input(case)
        base = CaseResult(case.name, config.name, data, case.expected, case.metadata)
        if self.cap is not None and self.cap.exhausted() is not None:
            self.stopped = True
            return _evolve(base, status="not_run")
        own = Budget(max_cost=math.inf) if self.estimate_cost is not None else None
        run_id = new_run_id()
        retries = [0]

        def progress(kind: str, _data: dict[str, Any]) -> None:
            if kind == "retry":
                retries[0] += 1

        settings = RunSettings(
            run_id=run_id,
            budgets=self._ledgers(own),
            estimate_cost=self.estimate_cost,
            progress=progress,
        )
        started = self.clock()
        result = await agent.run(case.input, settings=settings)
        latency = self.clock() - started
        cost = None if own is None else own.used_cost
        self._spend(cost)
        status = result.status
        error = None if status.error is None else _error_text(status.error)
        structured = _json_of(result.structured)
        ran = _evolve(
            base,
            status=status.code,
            output=result.output,
            structured=structured,
            usage=result.usage,
            cost=cost,
            latency=latency,
            retries=retries[0],
            error=error,
        )
        if not result.success:
            return ran
        scored = OfflineCase(
            text,
            result.output,
            run_id,
            case.metadata,
            status.code,
            config.name,
            store_payloads="full",
            name=case.name,
            expected=case.expected,
            structured=structured,
            config=config.name,
        )
        return await self._score(ran, scored)

    def _ledgers(self, own: Budget | None) -> tuple[Budget, ...]:
        return tuple(ledger for ledger in (own, self.cap) if ledger is not None)

    def _spend(self, cost: float | None) -> None:
        if cost is not None:
            self.spent.append(cost)

    async def _score(self, ran: CaseResult, case: OfflineCase) -> CaseResult:
        """Every scorer on ``case``; the judges' runs charged to their own ledger and the
        shared one."""
        import attrs

        from ._settings import RunSettings
        from .budgets import Budget

        own = Budget(max_cost=math.inf) if self.estimate_cost is not None else None
        settings = RunSettings(budgets=self._ledgers(own), estimate_cost=self.estimate_cost)
        case = attrs.evolve(case, settings=settings)
        scores: dict[str, Score] = {}
        errors: dict[str, str] = {}
        for name, scorer in self.scorers:
            settled = await contained(scorer, case, self.scorer_timeout)
            if settled.ok:
                try:
                    score = _as_score(settled.value)
                except (TypeError, ValueError) as error:
                    errors[name] = _error_text(error)
                    continue
                if score is not None:
                    scores[name] = score
                continue
            errors[name] = _error_text(settled.error or TimeoutError("the scorer timed out"))
        judged = None if own is None else own.used_cost
        self._spend(judged)
        return _evolve(ran, scores=scores, score_errors=errors, judge_cost=judged)


def _evolve(result: CaseResult, **changes: Any) -> CaseResult:
    import attrs

    return attrs.evolve(result, **changes)


def _as_score(value: object) -> Score | None:
    if value is None or isinstance(value, Score):
        score = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        score = Score(float(value))
    else:
        raise TypeError(
            f"a scorer must return a float, a Score or None, got {type(value).__name__}"
        )
    if score is not None and not math.isfinite(score.value):
        raise ValueError("a scorer returned a value that is not finite")
    return score


def _error_text(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _json_of(value: Any) -> Any:
    """A structured output as JSON data (its text form when it has none)."""
    if value is None:
        return None
    from ._tool_types import is_json, unstructure

    try:
        plain = unstructure(value)
    except Exception:
        plain = None
    return plain if plain is not None and is_json(plain) else repr(value)
