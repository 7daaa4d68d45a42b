"""Online evaluation: score finished runs in the background, under a payload privacy policy.

``OnlineEvaluationConfig`` says which scorers run (its own plus those packages contribute
through ``oma_register_scorers``), how many runs are sampled, and what is kept of the input
(``store_payloads``):

- ``"none"`` (default): a placeholder, ``"[string input omitted; 12 characters]"`` or
  ``"[array input omitted; 3 items]"``; no content is stored;
- ``"full"``: the JSON of the input (``dump_messages`` for messages), cut at 8,192 characters
  with a marker appended when cut;
- ``"redacted"``: the same JSON with secrets scrubbed, URLs stripped of user info and query, and
  each media payload replaced by ``{"media_type", "bytes", "sha256"}`` (see ``redaction``).

Scorers run in process and always get the run's output text; what is *stored* (the
``EvalResult`` given to ``on_result`` and ``oma_evaluation_result``) follows the policy for the
input, the output, the metadata and the scorers' reasons. A scorer that sends a case out of
the process (``judge``: an LLM grading the run) sends only what the policy lets out.

Rate budgets (``max_cost_per_minute``, ``max_cost_per_hour``, ``max_tokens_per_minute``,
``max_tokens_per_hour``) bound what scoring spends: a case that would go over is dropped and
counted (``stats().dropped_budget``), never held back until the window reopens. See
``_spend_windows`` for the windows.

Evaluation observes only: it runs in asyncio tasks after the run returned, through a bounded
queue (cases beyond ``max_queue`` are dropped and counted) that ``max_concurrency``
worker tasks take cases from. A scorer or result sink that raises or times out is counted in
``stats().failed`` and skipped.

Offline evaluation lives here too (see docs/offline-evaluation.md): ``Dataset`` cases run on
several configs by ``evaluate`` into an ``EvalReport``, the built-in scorers (``exact``,
``contains``, ``regex``, ``json_equal``, ``schema_valid``) and the CI gate (``GatePolicy``,
``check_gate``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import logging
import math
import random
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from ._datasets import Dataset, DatasetCase, InvalidDatasetError
from ._eval_gate import GatePolicy, GateRule, InvalidPolicyError, check_gate
from ._eval_html import report_html
from ._eval_report import CaseResult, EvalReport, InvalidReportError
from ._eval_scorers import OfflineCase, contains, exact, json_equal, regex, schema_valid
from ._eval_types import EvalCase, EvalResult, Score
from ._isolation import Outcome, contained
from ._judge import JUDGE_PROMPT, Judge, PayloadWithheldError, Verdict, judge
from ._offline_eval import evaluate
from ._payloads import build_payload
from .errors import BudgetExceededError
from .redaction import DEFAULT_LIMIT, redact_json, redact_text

if TYPE_CHECKING:
    from ._settings import RunSettings
    from ._spend_windows import Spending
    from .budgets import Budget, CostEstimator
    from .messages import LLMMessage

__all__ = [
    "JUDGE_PROMPT",
    "CaseResult",
    "Dataset",
    "DatasetCase",
    "EvalCase",
    "EvalReport",
    "EvalResult",
    "EvaluationStats",
    "Evaluator",
    "GatePolicy",
    "GateRule",
    "InvalidDatasetError",
    "InvalidPolicyError",
    "InvalidReportError",
    "Judge",
    "OfflineCase",
    "OnlineEvaluationConfig",
    "PayloadWithheldError",
    "Score",
    "Scorer",
    "StorePayloads",
    "Verdict",
    "build_payload",
    "check_gate",
    "contains",
    "evaluate",
    "exact",
    "json_equal",
    "judge",
    "regex",
    "report_html",
    "schema_valid",
]

_log = logging.getLogger("oma.evaluation")

StorePayloads: TypeAlias = Literal["none", "redacted", "full"]
_POLICIES = ("none", "redacted", "full")


@attrs.frozen
class EvaluationStats:
    """Counters: cases ``sampled``, scorer calls that ``scored`` or ``failed`` (sinks that
    failed count too), cases ``dropped`` (queue full or shut down), cases still ``pending``,
    cases ``dropped_budget`` (a rate budget had no room for them, or stopped their judge)."""

    sampled: int
    scored: int
    dropped: int
    failed: int
    pending: int
    dropped_budget: int = 0


Scorer: TypeAlias = Callable[[EvalCase], Any]
Sampler: TypeAlias = float | Callable[[EvalCase], bool]


def _check_policy(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    if value not in _POLICIES:
        raise ValueError(f'store_payloads must be "none", "redacted" or "full", got {value!r}')


def _check_sample(_inst: object, _attr: attrs.Attribute[Any], value: object) -> None:
    if callable(value):
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"sample must be a number in [0, 1] or a predicate, got {value!r}")


def _check_positive(_inst: object, attr: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attr.name} must be an int >= 1, got {value!r}")


def _check_rate(_inst: object, attr: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{attr.name} must be a finite number >= 0 or None, got {value!r}")


def _scorers(value: Sequence[Scorer] | Mapping[str, Scorer] | Scorer) -> tuple[Scorer, ...]:
    if isinstance(value, Mapping):
        return tuple(_Named(name, fn) for name, fn in value.items())
    if callable(value):
        return (value,)
    return tuple(value)


@attrs.frozen
class _Named:
    name: str
    fn: Scorer

    @property
    def sends_payloads(self) -> bool:
        return bool(getattr(self.fn, "sends_payloads", False))

    def __call__(self, case: EvalCase) -> Any:
        return self.fn(case)


def _sends_payloads(scorer: Scorer) -> bool:
    """Whether a scorer sends cases out of the process (a judge says so)."""
    return getattr(scorer, "sends_payloads", False) is True


@attrs.frozen
class OnlineEvaluationConfig:
    """How runs are scored online. See the module docstring for the privacy policy.

    ``sample`` is a probability in [0, 1] or a predicate on the ``EvalCase``; ``on_result`` a
    sync or async callable receiving each ``EvalResult``; ``scorer_timeout`` bounds each async
    scorer and sink; ``plugin_scorers=False`` ignores scorers contributed by packages.

    Rate budgets: ``max_cost_per_minute``/``max_cost_per_hour`` (priced by ``estimate_cost``,
    else ``OpenMultiAgent(estimate_cost=...)``) and ``max_tokens_per_minute``/
    ``max_tokens_per_hour`` cap what the scorers' model calls (judges) spend in any such
    window; a case with no room is dropped and counted in ``stats().dropped_budget``.
    ``clock`` is the monotonic clock the windows read (a seam for tests).
    A ``judge`` sends cases out of the process, so it needs ``store_payloads`` "redacted" or
    "full": under "none" it refuses each case without calling its model (counted in
    ``stats().failed``; a warning is logged when the evaluator is made).
    """

    scorers: tuple[Scorer, ...] = attrs.field(default=(), converter=_scorers)
    sample: Sampler = attrs.field(default=1.0, validator=_check_sample)
    store_payloads: StorePayloads = attrs.field(default="none", validator=_check_policy)
    on_result: Callable[[EvalResult], Any] | None = None
    max_queue: int = attrs.field(default=1000, validator=_check_positive)
    max_concurrency: int = attrs.field(default=4, validator=_check_positive)
    scorer_timeout: float | None = 30.0
    plugin_scorers: bool = True
    payload_limit: int = attrs.field(default=DEFAULT_LIMIT, validator=_check_positive)
    max_cost_per_minute: float | None = attrs.field(default=None, validator=_check_rate)
    max_cost_per_hour: float | None = attrs.field(default=None, validator=_check_rate)
    max_tokens_per_minute: int | None = attrs.field(default=None, validator=_check_rate)
    max_tokens_per_hour: int | None = attrs.field(default=None, validator=_check_rate)
    estimate_cost: CostEstimator | None = attrs.field(default=None, eq=False)
    clock: Callable[[], float] = attrs.field(default=time.monotonic, eq=False, repr=False)

    @property
    def has_cost_caps(self) -> bool:
        return self.max_cost_per_minute is not None or self.max_cost_per_hour is not None

    @property
    def has_rate_budgets(self) -> bool:
        return (
            self.has_cost_caps
            or self.max_tokens_per_minute is not None
            or self.max_tokens_per_hour is not None
        )


def _scorer_name(scorer: Scorer, index: int, taken: set[str]) -> str:
    name = getattr(scorer, "name", None)
    if not isinstance(name, str) or not name:
        name = getattr(scorer, "__name__", None) or type(scorer).__name__
    if name == "<lambda>":
        name = f"scorer_{index}"
    if name in taken:
        name = f"{name}_{index}"
    taken.add(name)
    return name


def _as_score(value: object) -> Score:
    if isinstance(value, Score):
        score = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        score = Score(float(value))
    else:
        raise TypeError(f"a scorer must return a float or a Score, got {type(value).__name__}")
    if not math.isfinite(score.value):
        raise ValueError("a scorer returned a value that is not finite")
    return score


#: One finished run waiting to be scored: (input, output, run_id, metadata, status, agent).
#: A plain tuple: it is built on the run's own path, so it must cost next to nothing.
_Job: TypeAlias = tuple[
    "str | tuple[LLMMessage, ...]", str, "str | None", Mapping[str, Any], str, "str | None"
]


class _Jobs:
    """The cases waiting to be scored: a bounded FIFO that worker tasks wait on and ``flush``
    joins — ``asyncio.Queue``'s behaviour in the operations the evaluator uses (``put_nowait``
    raising ``asyncio.QueueFull``, ``get``, ``get_nowait``, ``task_done``, ``join``), inline:
    a case is queued on the run's own path, where each call counts."""

    __slots__ = ("_getters", "_items", "_joiners", "_maxsize", "_unfinished")

    def __init__(self, maxsize: int) -> None:
        self._items: collections.deque[_Job] = collections.deque()
        self._maxsize = maxsize
        self._getters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._unfinished = 0
        self._joiners: list[asyncio.Future[None]] = []

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, job: _Job) -> None:
        items = self._items
        if len(items) >= self._maxsize:
            raise asyncio.QueueFull
        items.append(job)
        self._unfinished += 1
        self._wake()

    def _wake(self) -> None:
        """Wake the first worker still waiting for a case."""
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def get_nowait(self) -> _Job:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> _Job:
        items = self._items
        while not items:
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()  # in case it is not done yet
                with contextlib.suppress(ValueError):
                    self._getters.remove(getter)
                if items and not getter.cancelled():  # woken, then cancelled: wake another
                    self._wake()
                raise
        return items.popleft()

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1
        if not self._unfinished:
            joiners, self._joiners = self._joiners, []
            for joiner in joiners:
                if not joiner.done():
                    joiner.set_result(None)

    async def join(self) -> None:
        """Wait until every case queued so far is done (``task_done``)."""
        if self._unfinished:
            joiner = asyncio.get_running_loop().create_future()
            self._joiners.append(joiner)
            await joiner


class _Workers:
    """The standard shape: a bounded queue (``_Jobs``) and worker tasks on one event loop.

    ``loop`` is None until the first worker starts (cases may be queued before any loop runs).
    ``busy`` counts the cases being scored; ``idle`` the workers waiting for a case.
    """

    def __init__(self, maxsize: int) -> None:
        self.queue = _Jobs(maxsize)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.idle: set[asyncio.Task[None]] = set()
        self.busy = 0

    def retire_idle(self) -> list[asyncio.Task[None]]:
        """Cancel the workers waiting on an empty queue (they hold no case); return them."""
        if not self.queue.empty():
            return []
        idle = list(self.idle)
        for task in idle:
            task.cancel()
        return idle

    def retire_all(self) -> list[asyncio.Task[None]]:
        """Cancel every worker once nothing is queued or being scored; return them."""
        if not self.queue.empty() or self.busy:
            return []
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        return tasks


class _Shutdown:
    """What ``shutdown()`` returns: awaiting it waits until queued cases are finished."""

    def __init__(self, evaluator: Evaluator) -> None:
        self._evaluator = evaluator

    def __await__(self) -> Generator[Any, None, None]:
        return self._evaluator.flush().__await__()


class Evaluator:
    """Runs an ``OnlineEvaluationConfig`` for an ``OpenMultiAgent`` (``oma.evaluation``).

    Finished runs are put on a bounded queue that ``max_concurrency`` worker tasks take cases
    from; ``flush`` joins the queue, ``shutdown`` stops accepting cases and lets the workers end.
    Workers start with the first case in a running loop and end at ``flush`` and ``shutdown``,
    so no evaluation task outlives either. If the loop changes (one ``asyncio.run`` after
    another), cases still queued move to a new queue on the new loop.
    """

    def __init__(
        self,
        config: OnlineEvaluationConfig,
        plugins: Any = None,
        *,
        estimate_cost: CostEstimator | None = None,
        tracer_provider: Any | None = None,
        trace_content: bool = False,
    ) -> None:
        """``estimate_cost``, ``tracer_provider`` and ``trace_content`` are the
        orchestrator's: what a judge's runs are priced and traced with (the config's own
        ``estimate_cost`` wins). A cost cap with no price anywhere is a ``ValueError``."""
        self.config = config
        self._plugins = plugins
        self._resolved: tuple[tuple[str, Scorer], ...] | None = None
        self._workers = _Workers(config.max_queue)
        self._closed = False
        self._sampled = 0
        self._scored = 0
        self._dropped = 0
        self._failed = 0
        self._dropped_budget = 0
        self._estimate_cost = config.estimate_cost or estimate_cost
        if config.has_cost_caps and self._estimate_cost is None:
            raise ValueError(
                "max_cost_per_minute/max_cost_per_hour need estimate_cost(usage, ctx) to price "
                "judge calls (on OnlineEvaluationConfig or OpenMultiAgent)"
            )
        self._spending: Spending | None = None
        if config.has_rate_budgets:
            from ._spend_windows import Spending

            self._spending = Spending(
                cost_per_minute=config.max_cost_per_minute,
                cost_per_hour=config.max_cost_per_hour,
                tokens_per_minute=config.max_tokens_per_minute,
                tokens_per_hour=config.max_tokens_per_hour,
                clock=config.clock,
            )
        self._tracer_provider = tracer_provider
        self._trace_content = trace_content
        self._tracer: Any | None = None
        # (host, its plugin generation) and the result hooks they had.
        self._hooks_kept: tuple[tuple[Any, Any], list[Any]] | None = None
        if config.store_payloads == "none" and any(map(_sends_payloads, config.scorers)):
            _log.warning(
                'online evaluation: store_payloads="none" withholds every case from the judges '
                'among its scorers; they will score nothing (use "redacted" or "full")'
            )

    # -- the public face ----------------------------------------------------------------------

    def stats(self) -> EvaluationStats:
        return EvaluationStats(
            sampled=self._sampled,
            scored=self._scored,
            dropped=self._dropped,
            failed=self._failed,
            pending=self._workers.queue.qsize() + self._workers.busy,
            dropped_budget=self._dropped_budget,
        )

    async def flush(self) -> None:
        """Wait until every case submitted so far has been scored and delivered.

        The workers then end, so no evaluation task outlives a flush (the next case starts
        them again).
        """
        while True:
            workers = self._start(asyncio.get_running_loop())
            await workers.queue.join()
            retired = workers.retire_all()
            if retired:
                await asyncio.wait(retired)
            if workers is self._workers and workers.queue.empty() and workers.busy == 0:
                return

    def shutdown(self, *, cancel: bool = False) -> _Shutdown:
        """Stop accepting cases (idempotent); ``cancel=True`` also drops the queued ones and
        cancels the cases being scored.

        Await the returned object to wait for the cases still queued or being scored and for
        the workers to end.
        """
        self._closed = True
        workers = self._workers
        if cancel:
            while not workers.queue.empty():
                workers.queue.get_nowait()
                workers.queue.task_done()
                self._dropped += 1
            for task in workers.tasks:
                task.cancel()
        else:
            workers.retire_idle()
        return _Shutdown(self)

    # -- what the orchestrator calls ----------------------------------------------------------

    def submit(
        self,
        input: str | tuple[LLMMessage, ...],
        output: str,
        *,
        run_id: str | None,
        metadata: Mapping[str, Any],
        status: str,
        agent: str | None,
    ) -> None:
        """Queue one finished run for scoring; never blocks and never raises."""
        sample = self.config.sample
        if not callable(sample):
            if sample <= 0 or (sample < 1 and random.random() >= sample):
                return
            self._sampled += 1
        if self._closed:
            self._dropped += 1
            return
        if self._spending is not None and self._spending.spent_out():
            self._dropped_budget += 1  # no room in a window: not even queued
            return
        workers = self._workers
        try:
            workers.queue.put_nowait((input, output, run_id, metadata, status, agent))
        except asyncio.QueueFull:
            self._dropped += 1
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no running loop: flush() starts the workers later
            return
        if workers.loop is not loop or len(workers.tasks) < self.config.max_concurrency:
            self._start(loop)

    # -- the workers --------------------------------------------------------------------------

    def _start(self, loop: asyncio.AbstractEventLoop) -> _Workers:
        """The workers of ``loop``, started up to ``max_concurrency`` while cases wait."""
        workers = self._workers
        if workers.loop is not None and workers.loop is not loop:
            # The queue belongs to an earlier loop (which ended): its cases move to a new one.
            moved = _Workers(self.config.max_queue)
            while not workers.queue.empty():
                moved.queue.put_nowait(workers.queue.get_nowait())
                workers.queue.task_done()
            self._workers = workers = moved
        workers.loop = loop
        if workers.queue.empty():
            return workers
        while len(workers.tasks) < self.config.max_concurrency:
            task = loop.create_task(self._work(workers), name="oma-evaluation-worker")
            workers.tasks.add(task)
            task.add_done_callback(workers.tasks.discard)
        return workers

    async def _work(self, workers: _Workers) -> None:
        queue = workers.queue
        me = asyncio.current_task()
        assert me is not None
        while not (self._closed and queue.empty()):
            workers.idle.add(me)
            try:
                job = await queue.get()
            finally:
                workers.idle.discard(me)
            workers.busy += 1
            try:
                await self._evaluate(job)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug here must not kill the worker silently
                self._failed += 1
                _log.warning("online evaluation failed: %s", type(error).__name__)
            finally:
                workers.busy -= 1
                queue.task_done()
        workers.retire_idle()  # shut down and drained: the others need not wait any longer

    def _scorer_list(self) -> tuple[tuple[str, Scorer], ...]:
        if self._resolved is None:
            scorers: list[Scorer] = list(self.config.scorers)
            if self.config.plugin_scorers:
                try:
                    scorers.extend(self._host().scorers())
                except Exception as error:
                    _log.warning("could not collect plugin scorers: %s", type(error).__name__)
            taken: set[str] = set()
            self._resolved = tuple((_scorer_name(s, i, taken), s) for i, s in enumerate(scorers))
        return self._resolved

    async def _evaluate(self, job: _Job) -> None:
        input, output, run_id, metadata, status, agent = job
        config = self.config
        policy = config.store_payloads
        payload = build_payload(input, policy, config.payload_limit)
        copied = copy.deepcopy(metadata) if metadata else {}
        fields: dict[str, Any] = {
            "input": payload,
            "output": output,
            "run_id": run_id,
            "metadata": copied,
            "status": status,
            "agent": agent,
            "store_payloads": policy,
        }
        if callable(config.sample):  # judged before its settings exist (they cost a budget)
            try:
                chosen = bool(config.sample(EvalCase(**fields)))
            except (Exception, asyncio.CancelledError) as error:
                self._failed += 1
                _log.warning("evaluation sample predicate raised %s", type(error).__name__)
                return
            if not chosen:
                return
            self._sampled += 1
        admitted = None
        if self._spending is not None:
            admitted = self._spending.admit()
            if admitted is None:  # a window has no room for a case: dropped, not held back
                self._dropped_budget += 1
                return
        try:
            settings = self._case_settings(run_id, admitted[0] if admitted is not None else None)
            case = EvalCase(**fields, settings=settings)
            scores, errors, stopped = await self._score(case)
        finally:
            if admitted is not None:
                assert self._spending is not None
                self._spending.settle(*admitted)
        if stopped:  # a judge's ledger ran out mid-case: the other scores are still kept
            self._dropped_budget += 1
        if policy == "full":
            stored: Any = copy.deepcopy(metadata) if metadata else {}
        else:
            stored = redact_json(metadata) if metadata else {}
            scores = {
                name: Score(s.value, redact_text(s.reason)) if s.reason else s
                for name, s in scores.items()
            }
        result = EvalResult(
            run_id=run_id,
            agent=agent,
            status=status,
            input=payload,
            output=build_payload(output, policy, config.payload_limit, kind="output"),
            metadata=stored,
            scores=scores,
            errors=errors,
            store_payloads=policy,
        )
        await self._deliver(result)

    async def _score(self, case: EvalCase) -> tuple[dict[str, Score], dict[str, str], bool]:
        """Every scorer on ``case``: the scores, the errors by scorer, and whether a scorer
        was stopped by the case's budget ledger (counted as the case's budget drop, not as
        a failed scorer)."""
        config = self.config
        policy = config.store_payloads
        scores: dict[str, Score] = {}
        errors: dict[str, str] = {}
        stopped = False
        for name, scorer in self._scorer_list():
            settled = await contained(scorer, case, config.scorer_timeout)
            if settled.ok:
                try:
                    scores[name] = _as_score(settled.value)
                except Exception as error:
                    settled = Outcome(error=error)
                else:
                    self._scored += 1
                    continue
            failure = settled.error or TimeoutError()
            kind = type(failure).__name__
            if isinstance(failure, BudgetExceededError) and case.settings is not None:
                stopped = True
            else:
                self._failed += 1
            full = policy == "full" and not isinstance(failure, asyncio.CancelledError)
            errors[name] = redact_text(f"{kind}: {failure}") if full else kind
            _log.warning("scorer %s raised %s", name, kind)
        return scores, errors, stopped

    def _case_settings(self, run_id: str | None, ledger: Budget | None) -> RunSettings:
        """What a scorer's own model runs go with: the case's ledger, the price, the tracer
        and ``metadata={"evaluated_run": run_id}``; never an evaluator (a judge's run is
        not evaluated in turn)."""
        from ._settings import RunSettings

        if self._tracer is None and (self._tracer_provider is not None or self._tracing()):
            from .tracing import get_tracer

            try:
                self._tracer = get_tracer(self._tracer_provider)
            except Exception as error:  # tracing is never worth failing a judge for
                _log.warning("judge tracing disabled: %s", type(error).__name__)
        return RunSettings(
            metadata={"evaluated_run": run_id},
            budgets=(ledger,) if ledger is not None else (),
            estimate_cost=self._estimate_cost,
            tracer=self._tracer,
            trace_content=self._trace_content,
        )

    def _tracing(self) -> bool:
        """Whether OpenTelemetry is loaded at all (its global provider may then be set)."""
        import sys

        return "opentelemetry.trace" in sys.modules

    def _host(self) -> Any:
        """The ``PluginHost`` given, or the process-wide one (where the orchestrator's runs
        look too); typed loosely so that this module needs no import of the plugin host."""
        if self._plugins is None:
            from .plugins import PluginHost

            self._plugins = PluginHost.default()
        return self._plugins

    async def _deliver(self, result: EvalResult) -> None:
        sinks: list[Callable[[EvalResult], Any]] = []
        if self.config.on_result is not None:
            sinks.append(self.config.on_result)
        sinks.extend(self._result_hooks())  # the plugins' result hooks, after the config's own
        for sink in sinks:
            settled = await contained(sink, result, self.config.scorer_timeout)
            if not settled.ok:
                self._failed += 1
                kind = type(settled.error or TimeoutError()).__name__
                _log.warning("evaluation result sink raised %s", kind)

    def _result_hooks(self) -> list[Any]:
        """The ``oma_evaluation_result`` hooks, kept until a plugin is registered or
        unregistered (the host's plugin manager counts those changes: ``generation``)."""
        try:
            host = self._host()
            generation = getattr(host.pm, "generation", None)
            kept = self._hooks_kept
            if kept is not None and generation is not None and kept[0] == (host, generation):
                return kept[1]
            hooks: list[Any] = list(host.hooks.evaluation_result())
        except Exception as error:
            _log.warning("could not list evaluation hooks: %s", type(error).__name__)
            return []
        self._hooks_kept = ((host, generation), hooks)
        return hooks
