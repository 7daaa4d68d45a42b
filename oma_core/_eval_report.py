"""The report of an offline evaluation: one ``CaseResult`` per case and config, its summary,
and the forms it is kept and shown in (stable JSON, JUnit XML, the side-by-side comparison).

``to_json`` is versioned (``"format": "oma-eval-report", "version": 1``) and
``EvalReport.from_json`` reads it back into an equal report; a file of another format or
version is an ``InvalidReportError``. Percentiles interpolate linearly between the closest
ranks (numpy's default), so a figure never depends on anything but the values.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from ._eval_types import Score
from .errors import UsageError
from .providers import Usage

__all__ = [
    "REPORT_VERSION",
    "CaseResult",
    "Comparison",
    "EvalReport",
    "InvalidReportError",
    "percentile",
]

REPORT_FORMAT: Final = "oma-eval-report"
REPORT_VERSION: Final = 1
#: The statuses of a case: a run's ``status.code``, or ``not_run`` (``max_cost`` was spent).
STATUSES: Final = ("ok", "error", "timeout", "budget_exhausted", "not_run")
_USAGE_FIELDS: Final = tuple(field.name for field in attrs.fields(Usage))
#: The metrics a summary row holds, and which way is better for each.
METRICS: Final = ("mean", "p50", "p95", "pass_rate")


class InvalidReportError(UsageError, ValueError):
    """A report (``EvalReport.from_json``) is not one this version reads; ``path`` names the
    place (``cases[3].usage``), ``reason`` what is wrong."""

    code = "INVALID_REPORT"

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"report {path} {reason}" if path else f"report {reason}")


@attrs.frozen
class CaseResult:
    """One case run on one config: what went in (``input`` as JSON data), what came out
    (``output``, ``structured``), the ``scores`` (and ``score_errors``, a failed scorer's
    error text, by scorer name), ``usage``, ``cost`` (None without a price) and
    ``judge_cost`` (what the scorers' own model runs cost), ``latency`` in seconds,
    ``retries``, and how it ended: ``status`` (a run's ``status.code`` or ``not_run``)
    and ``error`` (the text of what failed it)."""

    case: str
    config: str
    input: Any
    expected: Any = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    status: str = "ok"
    output: str | None = None
    structured: Any = None
    scores: Mapping[str, Score] = attrs.field(factory=dict)
    score_errors: Mapping[str, str] = attrs.field(factory=dict)
    usage: Usage = Usage()
    cost: float | None = None
    judge_cost: float | None = None
    latency: float | None = None
    retries: int = 0
    error: str | None = None

    def failures(self, pass_marks: Mapping[str, float]) -> list[str]:
        """Why this result fails (empty when it passes): the run's error, a scorer that
        failed, each score below its pass mark (1.0 unless ``pass_marks`` says)."""
        reasons = [f"{self.status}: {self.error}"] if self.status != "ok" else []
        reasons += [f"{name} failed: {text}" for name, text in self.score_errors.items()]
        for name, score in self.scores.items():
            mark = pass_marks.get(name, 1.0)
            if score.value < mark:
                why = f" ({score.reason})" if score.reason else ""
                reasons.append(f"{name} {score.value:g} < {mark:g}{why}")
        return reasons


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` (0..1) percentile of ``values`` (not empty), interpolated linearly."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _total(values: Iterable[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return math.fsum(known) if known else None


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


def _results(results: Iterable[CaseResult]) -> tuple[CaseResult, ...]:
    return tuple(results)


@attrs.frozen
class EvalReport:
    """What ``evaluate`` found: ``cases`` (one ``CaseResult`` per case and config, in the
    dataset's order, each case on every config before the next), the ``configs`` and
    ``scorers`` by name, each scorer's pass mark, what was ``spent`` in all (runs and
    judges; None without a price), ``max_cost`` and whether it ``stopped`` the evaluation
    (the cases it left are ``not_run``)."""

    dataset: str
    configs: tuple[str, ...] = attrs.field(converter=_names)
    scorers: tuple[str, ...] = attrs.field(converter=_names)
    cases: tuple[CaseResult, ...] = attrs.field(converter=_results)
    pass_marks: Mapping[str, float] = attrs.field(factory=dict)
    spent: float | None = None
    max_cost: float | None = None
    stopped: bool = False

    @property
    def not_run(self) -> list[CaseResult]:
        """The results of cases that were not run (``max_cost`` was spent first)."""
        return [case for case in self.cases if case.status == "not_run"]

    def pass_mark(self, scorer: str) -> float:
        return self.pass_marks.get(scorer, 1.0)

    def summary(self) -> list[dict[str, Any]]:
        """One row per config and scorer: ``{"config", "scorer", "n", "mean", "p50", "p95",
        "pass_rate", "cost", "latency_p50", "latency_p95"}``. ``n`` counts the cases scored;
        the score figures are None when it is 0. ``cost`` sums the config's runs (None
        without a price); latencies are of the runs that were made."""
        rows: list[dict[str, Any]] = []
        for config in self.configs:
            mine = [case for case in self.cases if case.config == config]
            ran = [case.latency for case in mine if case.latency is not None]
            common = {
                "cost": _total(case.cost for case in mine),
                "latency_p50": percentile(ran, 0.5) if ran else None,
                "latency_p95": percentile(ran, 0.95) if ran else None,
            }
            for scorer in self.scorers or (None,):
                values = [] if scorer is None else _values(mine, scorer)
                mark = self.pass_mark(scorer or "")
                rows.append(
                    {
                        "config": config,
                        "scorer": scorer,
                        "n": len(values),
                        "mean": math.fsum(values) / len(values) if values else None,
                        "p50": percentile(values, 0.5) if values else None,
                        "p95": percentile(values, 0.95) if values else None,
                        "pass_rate": (
                            sum(value >= mark for value in values) / len(values) if values else None
                        ),
                        **common,
                    }
                )
        return rows

    def scored(self, config: str) -> int:
        """How many cases of ``config`` were scored (by at least one scorer)."""
        return sum(1 for case in self.cases if case.config == config and case.scores)

    # -- kept as JSON --------------------------------------------------------------------------

    def to_json(self) -> str:
        """The report as stable, versioned JSON (``EvalReport.from_json`` reads it back)."""
        data = {
            "format": REPORT_FORMAT,
            "version": REPORT_VERSION,
            "dataset": self.dataset,
            "configs": list(self.configs),
            "scorers": [{"name": s, "pass_mark": self.pass_mark(s)} for s in self.scorers],
            "spent": self.spent,
            "max_cost": self.max_cost,
            "stopped": self.stopped,
            "cases": [_case_json(case) for case in self.cases],
        }
        return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> EvalReport:
        """The report ``to_json`` wrote; anything else is an ``InvalidReportError``."""
        try:
            data = json.loads(text)
        except ValueError as error:
            raise InvalidReportError("", f"is not JSON: {error}") from None
        read = _Reader(data)
        if read.get("", "format", str) != REPORT_FORMAT:
            raise InvalidReportError("format", f'must be "{REPORT_FORMAT}"')
        version = read.get("", "version", int)
        if version != REPORT_VERSION:
            raise InvalidReportError("version", f"is {version}; this oma reads {REPORT_VERSION}")
        scorers = read.items("", "scorers")
        marks = {
            read.get(f"scorers[{i}]", "name", str): read.number(f"scorers[{i}]", "pass_mark")
            for i in range(len(scorers))
        }
        return cls(
            dataset=read.get("", "dataset", str),
            configs=[
                read.text(f"configs[{i}]", c) for i, c in enumerate(read.items("", "configs"))
            ],
            scorers=list(marks),
            cases=[_case_from(read, i) for i in range(len(read.items("", "cases")))],
            pass_marks=marks,
            spent=read.number("", "spent", optional=True),
            max_cost=read.number("", "max_cost", optional=True),
            stopped=read.get("", "stopped", bool),
        )

    # -- shown ---------------------------------------------------------------------------------

    def to_junit(self) -> str:
        """JUnit XML: a test suite per config, a test case per dataset case, failing when the
        run failed, a scorer failed or a score is below its pass mark; ``not_run`` cases
        are skipped."""
        from xml.etree import ElementTree as ET

        root = ET.Element("testsuites", name=f"oma eval {self.dataset}")
        for config in self.configs:
            mine = [case for case in self.cases if case.config == config]
            suite = ET.SubElement(root, "testsuite", name=config, tests=str(len(mine)))
            counts = {"failures": 0, "errors": 0, "skipped": 0}
            for case in mine:
                element = ET.SubElement(
                    suite,
                    "testcase",
                    classname=f"{_xml(self.dataset)}.{_xml(config)}",
                    name=_xml(case.case),
                    time=f"{case.latency or 0.0:.6f}",
                )
                if case.status == "not_run":
                    counts["skipped"] += 1
                    ET.SubElement(element, "skipped", message="not run: max_cost was spent")
                    continue
                reasons = case.failures(self.pass_marks)
                if reasons:
                    kind = "failure" if case.status == "ok" else "error"
                    counts["failures" if kind == "failure" else "errors"] += 1
                    failure = ET.SubElement(element, kind, message=_xml(reasons[0]))
                    failure.text = _xml("\n".join(reasons))
            for key, count in counts.items():
                suite.set(key, str(count))
        return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"

    def comparison(self) -> Comparison:
        """The side-by-side table: a column per config, a row per scorer (mean and pass
        rate), then cost and latency rows; the best cell of each row marked."""
        rows = {(row["config"], row["scorer"]): row for row in self.summary()}
        firsts = [rows[(config, (self.scorers or (None,))[0])] for config in self.configs]
        lines: list[tuple[str, list[str], set[int]]] = []
        for scorer in self.scorers:
            cells = [rows[(config, scorer)] for config in self.configs]
            means = [row["mean"] for row in cells]
            texts = [_score_cell(row) for row in cells]
            lines.append((scorer, texts, _best(means, max)))
        costs = [row["cost"] for row in firsts]
        lines.append(("cost", [_money(c) for c in costs], _best(costs, min)))
        for key, label in (("latency_p50", "latency p50"), ("latency_p95", "latency p95")):
            values = [row[key] for row in firsts]
            lines.append((label, [_seconds(v) for v in values], _best(values, min)))
        return Comparison(self.configs, tuple(lines))


@attrs.frozen
class Comparison:
    """The side-by-side table as text: ``columns`` (the configs) and ``rows`` of (label,
    a cell per column, the indexes of the best cells)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, list[str], set[int]], ...]


def _values(cases: Iterable[CaseResult], scorer: str) -> list[float]:
    return [case.scores[scorer].value for case in cases if scorer in case.scores]


def _best(values: Sequence[float | None], pick: Callable[..., float]) -> set[int]:
    known = [value for value in values if value is not None]
    if len(values) < 2 or not known:
        return set()
    best = pick(known)
    return {i for i, value in enumerate(values) if value == best}


def _score_cell(row: Mapping[str, Any]) -> str:
    if not row["n"]:
        return "-"
    return f"{row['mean']:.2f} (pass {row['pass_rate']:.0%}, n={row['n']})"


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 10 else f"{value:.1f} s"


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (control characters)."""
    return _NOT_XML.sub("\ufffd", text)


def _case_json(case: CaseResult) -> dict[str, Any]:
    return {
        "case": case.case,
        "config": case.config,
        "status": case.status,
        "input": case.input,
        "expected": case.expected,
        "metadata": dict(case.metadata),
        "output": case.output,
        "structured": case.structured,
        "scores": {
            name: {"value": score.value, "reason": score.reason}
            for name, score in case.scores.items()
        },
        "score_errors": dict(case.score_errors),
        "usage": {name: getattr(case.usage, name) for name in _USAGE_FIELDS},
        "cost": case.cost,
        "judge_cost": case.judge_cost,
        "latency": case.latency,
        "retries": case.retries,
        "error": case.error,
    }


class _Reader:
    """Typed reads from a report's JSON, each failure an ``InvalidReportError`` naming its
    place."""

    def __init__(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise InvalidReportError("", "must be a JSON object")
        self.data = data

    def at(self, path: str) -> Any:
        node: Any = self.data
        for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
            node = node[int(part[1:-1])] if part.startswith("[") else node[part]
        return node

    def get(self, path: str, key: str, kind: type) -> Any:
        node = self.at(path)
        where = f"{path}.{key}" if path else key
        if not isinstance(node, dict) or key not in node:
            raise InvalidReportError(where, "is missing")
        value = node[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InvalidReportError(where, f"must be {kind.__name__}")
        return value

    def text(self, where: str, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidReportError(where, "must be text")
        return value

    def items(self, path: str, key: str) -> list[Any]:
        value = self.get(path, key, list)
        assert isinstance(value, list)
        return value

    def number(self, path: str, key: str, optional: bool = False) -> Any:
        node = self.at(path)
        where = f"{path}.{key}" if path else key
        value = node.get(key) if isinstance(node, dict) else None
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidReportError(where, "must be a number")
        return float(value)


def _case_from(read: _Reader, index: int) -> CaseResult:
    here = f"cases[{index}]"
    node = read.at(here)
    if not isinstance(node, dict):
        raise InvalidReportError(here, "must be an object")
    status = read.get(here, "status", str)
    if status not in STATUSES:
        raise InvalidReportError(f"{here}.status", f"must be one of {', '.join(STATUSES)}")
    scores: dict[str, Score] = {}
    for name in read.get(here, "scores", dict):
        reason = read.at(f"{here}.scores").get(name, {}).get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InvalidReportError(f"{here}.scores.{name}.reason", "must be text or null")
        scores[name] = Score(read.number(f"{here}.scores.{name}", "value"), reason)
    errors = read.get(here, "score_errors", dict)
    usage = read.get(here, "usage", dict)
    counts = {}
    for name in _USAGE_FIELDS:
        count = usage.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, int):
            raise InvalidReportError(f"{here}.usage.{name}", "must be an integer")
        counts[name] = count
    output, error = node.get("output"), node.get("error")
    if not all(isinstance(v, str | None) for v in (output, error, *errors.values())):
        raise InvalidReportError(here, "has output, error or score_errors that are not text")
    return CaseResult(
        case=read.get(here, "case", str),
        config=read.get(here, "config", str),
        input=node.get("input"),
        expected=node.get("expected"),
        metadata=read.get(here, "metadata", dict),
        status=status,
        output=output,
        structured=node.get("structured"),
        scores=scores,
        score_errors=dict(errors),
        usage=Usage(**counts),
        cost=read.number(here, "cost", optional=True),
        judge_cost=read.number(here, "judge_cost", optional=True),
        latency=read.number(here, "latency", optional=True),
        retries=read.get(here, "retries", int),
        error=error,
    )
