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
input, the output, the metadata and the scorers' reasons.

Evaluation observes only: it runs in asyncio tasks after the run returned, through a bounded
``asyncio.Queue`` (cases beyond ``max_queue`` are dropped and counted) that ``max_concurrency``
worker tasks take cases from. A scorer or result sink that raises or times out is counted in
``stats().failed`` and skipped.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import math
import random
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from ._eval_types import EvalCase, EvalResult, Score
from ._isolation import Outcome, contained
from .redaction import DEFAULT_LIMIT, cut, redact_json, redact_text

if TYPE_CHECKING:
    from .messages import LLMMessage

__all__ = [
    "EvalCase",
    "EvalResult",
    "EvaluationStats",
    "Evaluator",
    "OnlineEvaluationConfig",
    "Score",
    "Scorer",
    "StorePayloads",
    "build_payload",
]

_log = logging.getLogger("oma.evaluation")

StorePayloads: TypeAlias = Literal["none", "redacted", "full"]
_POLICIES = ("none", "redacted", "full")


@attrs.frozen
class EvaluationStats:
    """Counters: cases ``sampled``, scorer calls that ``scored`` or ``failed`` (sinks that
    failed count too), cases ``dropped`` (queue full or shut down), cases still ``pending``."""

    sampled: int
    scored: int
    dropped: int
    failed: int
    pending: int


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

    def __call__(self, case: EvalCase) -> Any:
        return self.fn(case)


@attrs.frozen
class OnlineEvaluationConfig:
    """How runs are scored online. See the module docstring for the privacy policy.

    ``sample`` is a probability in [0, 1] or a predicate on the ``EvalCase``; ``on_result`` a
    sync or async callable receiving each ``EvalResult``; ``scorer_timeout`` bounds each async
    scorer and sink; ``plugin_scorers=False`` ignores scorers contributed by packages.
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


def build_payload(
    value: str | Sequence[LLMMessage],
    policy: str,
    limit: int = DEFAULT_LIMIT,
    *,
    kind: str = "input",
) -> str:
    """The stored form of an input (or, with ``kind="output"``, an output text)."""
    if policy == "none":
        if isinstance(value, str):
            return f"[string {kind} omitted; {len(value)} characters]"
        return f"[array {kind} omitted; {len(value)} items]"
    data: Any
    if isinstance(value, str):
        data = value
    else:
        from .serialization import dump_messages

        data = dump_messages(value)
    if policy == "redacted":
        data = redact_json(data)
    if kind == "output" and isinstance(data, str):
        return cut(data, limit)
    return cut(json.dumps(data, ensure_ascii=False), limit)


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


class _Workers:
    """The standard shape: a bounded ``asyncio.Queue`` and worker tasks on one event loop.

    ``loop`` is None until the first worker starts (cases may be queued before any loop runs).
    ``busy`` counts the cases being scored; ``idle`` the workers waiting for a case.
    """

    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize)
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

    def __init__(self, config: OnlineEvaluationConfig, plugins: Any = None) -> None:
        self.config = config
        self._plugins = plugins
        self._resolved: tuple[tuple[str, Scorer], ...] | None = None
        self._workers = _Workers(config.max_queue)
        self._closed = False
        self._sampled = 0
        self._scored = 0
        self._dropped = 0
        self._failed = 0

    # -- the public face ----------------------------------------------------------------------

    def stats(self) -> EvaluationStats:
        return EvaluationStats(
            sampled=self._sampled,
            scored=self._scored,
            dropped=self._dropped,
            failed=self._failed,
            pending=self._workers.queue.qsize() + self._workers.busy,
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
        case = EvalCase(
            input=payload,
            output=output,
            run_id=run_id,
            metadata=copy.deepcopy(metadata) if metadata else {},
            status=status,
            agent=agent,
        )
        if callable(config.sample):
            try:
                chosen = bool(config.sample(case))
            except (Exception, asyncio.CancelledError) as error:
                self._failed += 1
                _log.warning("evaluation sample predicate raised %s", type(error).__name__)
                return
            if not chosen:
                return
            self._sampled += 1
        scores: dict[str, Score] = {}
        errors: dict[str, str] = {}
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
            self._failed += 1
            failure = settled.error or TimeoutError()
            kind = type(failure).__name__
            full = policy == "full" and not isinstance(failure, asyncio.CancelledError)
            errors[name] = redact_text(f"{kind}: {failure}") if full else kind
            _log.warning("scorer %s raised %s", name, kind)
        if policy == "full":
            stored: Any = copy.deepcopy(metadata) if metadata else {}
        else:
            stored = redact_json(metadata) if metadata else {}
            scores = {
                name: Score(s.value, redact_text(s.reason) if s.reason else s.reason)
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
        try:  # the plugins' result hooks, after the config's own
            sinks.extend(self._host().hook_calls("oma_evaluation_result"))
        except Exception as error:
            _log.warning("could not list evaluation hooks: %s", type(error).__name__)
        for sink in sinks:
            settled = await contained(sink, result, self.config.scorer_timeout)
            if not settled.ok:
                self._failed += 1
                kind = type(settled.error or TimeoutError()).__name__
                _log.warning("evaluation result sink raised %s", kind)
