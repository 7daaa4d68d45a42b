"""``oma eval``: run a dataset on several models and compare them, gate a report in CI, show one.

- ``oma eval run DATASET -m MODEL [-m MODEL ...]``: every case on every model, scored by the
  built-in scorers named with ``--scorer`` (``exact`` when none is named) and an LLM judge
  with ``--judge RUBRIC``; a progress bar on a terminal (cases done, cost so far), then the
  side-by-side table (or the report's JSON with ``--json``); ``-o REPORT.json`` keeps the
  report, ``--junit PATH`` writes JUnit XML. A model is ``PROVIDER:MODEL`` or a provider
  alone (its default model); ``-O NAME VALUE`` gives an option to each model whose provider
  takes it. Exit 0 once the report is made, whatever it says: the gate judges it.
- ``oma eval gate REPORT.json --policy POLICY.json [--baseline OLD.json]``: exit 0 when the
  policy holds, 1 naming each failed rule, 2 for a bad policy or report.
- ``oma eval show REPORT.json [--html PATH]``: the table again; a self-contained page.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._exits import FAILED, command_guard, fail, usage
from ._live import printable

if TYPE_CHECKING:
    from .._eval_report import CaseResult, EvalReport
    from ..agent import AgentConfig
    from ..budgets import CostContext
    from ..plugins import PluginHost
    from ..providers import Usage

#: The largest report or policy file read: 256 MiB (a report holds its cases' media).
_MAX_FILE = 256 * 1024 * 1024


@click.group("eval")
def eval_group() -> None:
    """Evaluate models on a dataset, gate a report in CI, show a report."""


@eval_group.command("run")
@click.argument("dataset", type=click.Path(dir_okay=False))
@click.option(
    "-m",
    "--model",
    "models",
    multiple=True,
    required=True,
    metavar="MODEL",
    help="A model to evaluate: PROVIDER:MODEL or PROVIDER (repeatable).",
)
@click.option(
    "-O",
    "--option",
    "options",
    nargs=2,
    multiple=True,
    metavar="NAME VALUE",
    help="An option for each model whose provider takes it (VALUE read as JSON "
    "when it parses; repeatable).",
)
@click.option(
    "--scorer",
    "scorers",
    multiple=True,
    metavar="NAME",
    help="A scorer: exact, contains, regex, json_equal, schema_valid or a plugin's "
    "(repeatable; default exact).",
)
@click.option(
    "--judge",
    "rubric",
    default=None,
    metavar="RUBRIC",
    help="Also score each case with an LLM judge grading it against RUBRIC.",
)
@click.option(
    "--judge-model",
    default=None,
    metavar="MODEL",
    help="The judge's model (default: the first -m).",
)
@click.option(
    "--pass-mark",
    "pass_marks",
    nargs=2,
    multiple=True,
    metavar="SCORER VALUE",
    type=(str, click.FloatRange(0, 1)),
    help="The score a scorer's case must reach to pass (default 1).",
)
@click.option(
    "--price",
    "prices",
    nargs=3,
    multiple=True,
    metavar="MODEL IN OUT",
    type=(str, click.FloatRange(min=0), click.FloatRange(min=0)),
    help="USD per million input and output tokens of MODEL (repeatable; every "
    "model, and the judge's, needs one once any is given).",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0),
    default=None,
    metavar="USD",
    help="Stop starting cases once this much is spent (needs --price).",
)
@click.option(
    "-j",
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Runs at once.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report's JSON, not the table.")
@click.option("--junit", "junit", default=None, metavar="PATH", help="Write JUnit XML here.")
@click.option(
    "-o",
    "--output",
    "output",
    default=None,
    metavar="REPORT.json",
    help="Write the report's JSON here.",
)
@command_guard
def run(
    dataset: str,
    models: tuple[str, ...],
    options: tuple[tuple[str, str], ...],
    scorers: tuple[str, ...],
    rubric: str | None,
    judge_model: str | None,
    pass_marks: tuple[tuple[str, float], ...],
    prices: tuple[tuple[str, float, float], ...],
    max_cost: float | None,
    concurrency: int,
    as_json: bool,
    junit: str | None,
    output: str | None,
) -> None:
    """Run every case of DATASET (YAML or JSON) on every model and compare them."""
    from .._datasets import Dataset
    from .._offline_eval import evaluate
    from ..plugins import PluginHost

    if as_json and junit == "-":
        usage("--json and --junit - both write to stdout: give --junit a file")
    host = PluginHost.default()
    loaded = Dataset.load(dataset)
    configs = [_config(model, options, host) for model in models]
    grader = _config(judge_model or models[0], options, host) if rubric is not None else None
    _check_options(options, [*configs, *([grader] if grader else [])], host)
    chosen = _scorers(scorers, rubric, grader, host)
    estimate = _pricing(prices, [*models, *([judge_model or models[0]] if rubric else [])])
    if max_cost is not None and estimate is None:
        usage("--max-cost needs --price MODEL IN OUT for each model to price the calls")
    progress = _Progress(len(loaded.cases) * len(configs), estimate is not None)
    with progress:
        report = asyncio.run(
            evaluate(
                loaded,
                configs,
                chosen,
                concurrency=concurrency,
                max_cost=max_cost,
                estimate_cost=estimate,
                pass_marks=dict(pass_marks),
                plugins=host,
                on_result=progress.advance,
            )
        )
    if output is not None:
        _write(output, report.to_json())
    if junit is not None:
        _write(junit, report.to_junit())
    if as_json:
        click.echo(report.to_json(), nl=False)
    else:
        print_table(report)


def _config(model: str, options: Sequence[tuple[str, str]], host: PluginHost) -> AgentConfig:
    """The config of one ``-m``: named as given, with the ``-O`` options its provider takes."""
    import attrs

    from ._agent import AgentOptions, make_agent

    specs = host.provider_specs()
    provider, name = (model, None) if model in specs else (None, model)
    chosen = provider or model.partition(":")[0]
    taken = [(key, value) for key, value in options if _takes(host, chosen, key)]
    agent = make_agent(AgentOptions(provider=provider, model=name, options=tuple(taken)), host)
    return attrs.evolve(agent.config, name=model)


def _takes(host: PluginHost, provider: str, option: str) -> bool:
    from ._agent import PORTABLE_OPTIONS

    if option in PORTABLE_OPTIONS:
        return True
    spec = host.provider_specs().get(provider)
    if spec is None:
        return False
    return spec.provider_options is None or option in spec.provider_options


def _check_options(
    options: Sequence[tuple[str, str]], configs: Sequence[AgentConfig], host: PluginHost
) -> None:
    providers = {str(config.provider) for config in configs}
    for key, _value in options:
        if not any(_takes(host, provider, key) for provider in providers):
            usage(
                f"-O {key}: no model's provider takes this option ({', '.join(sorted(providers))})"
            )


def _scorers(
    names: Sequence[str], rubric: str | None, grader: AgentConfig | None, host: PluginHost
) -> dict[str, Any]:
    from .._eval_scorers import BUILT_IN_SCORERS

    known: dict[str, Any] = dict(BUILT_IN_SCORERS)
    for scorer in host.scorers():
        name = getattr(scorer, "name", None) or getattr(scorer, "__name__", None)
        if isinstance(name, str) and name not in known:
            known[name] = scorer
    chosen: dict[str, Any] = {}
    for name in names or (() if rubric else ("exact",)):
        if name not in known:
            usage(f"--scorer {name} is not a scorer (known: {', '.join(sorted(known))})")
        chosen[name] = known[name]
    if rubric is not None and grader is not None:
        from .._judge import judge

        if not rubric.strip():
            usage("--judge needs a rubric (the text the judge grades against)")
        chosen["judge"] = judge(grader, rubric, plugins=host)
    return chosen


def _pricing(
    prices: Sequence[tuple[str, float, float]], models: Sequence[str]
) -> Callable[[Usage, CostContext], float] | None:
    if not prices:
        return None
    table = {model: (price_in, price_out) for model, price_in, price_out in prices}
    for model in models:
        if model not in table:
            usage(f"--price is given for some models but not for {model}: give every model one")
    for model in table:
        if model not in models:
            usage(f"--price {model}: no -m or --judge-model names this model")

    def estimate(usage: Usage, context: CostContext) -> float:
        price_in, price_out = table[context.agent]
        return (usage.input_tokens * price_in + usage.output_tokens * price_out) / 1_000_000

    return estimate


class _Progress:
    """A progress bar on a terminal's stderr (cases done, cost so far); nothing elsewhere."""

    def __init__(self, total: int, priced: bool) -> None:
        self.total = total
        self.priced = priced
        self.spent = 0.0
        self.bar: Any = None
        self.task: Any = None
        stream = sys.stderr
        self.live = stream.isatty() and os.environ.get("TERM", "") not in ("dumb", "unknown")

    def __enter__(self) -> _Progress:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self._label(), total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def _label(self) -> str:
        return f"cases (cost so far ${self.spent:.4f})" if self.priced else "cases"

    def advance(self, result: CaseResult) -> None:
        self.spent += (result.cost or 0.0) + (result.judge_cost or 0.0)
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=self._label())


def print_table(report: EvalReport) -> None:
    """The side-by-side table on stdout: a column per model, the best cell of a row marked."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    comparison = report.comparison()
    table = Table(title=printable(f"{report.dataset}: {len(report.cases)} runs"))
    table.add_column("")
    for column in comparison.columns:
        table.add_column(Text(printable(column)))
    for label, cells, best in comparison.rows:
        table.add_row(
            Text(printable(label)),
            *(
                Text(f"{cell} *", style="bold green") if i in best else Text(cell)
                for i, cell in enumerate(cells)
            ),
        )
    console = Console(width=max(100, Console().width), highlight=False)
    console.print(table)
    footer = "* best of the row"
    if report.spent is not None:
        footer += f"; spent ${report.spent:.4f} in all (judges included)"
    failed = sum(1 for case in report.cases if case.status not in ("ok", "not_run"))
    if failed:
        footer += f"; {failed} runs failed"
    if report.stopped:
        footer += f"; max_cost reached: {len(report.not_run)} runs not made"
    click.echo(footer)


@eval_group.command("gate")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@click.option(
    "--policy",
    "policy_path",
    required=True,
    metavar="POLICY.json",
    type=click.Path(dir_okay=False),
    help="The policy the report must meet.",
)
@click.option(
    "--baseline",
    "baseline_path",
    default=None,
    metavar="OLD.json",
    type=click.Path(dir_okay=False),
    help="A report to check regressions against.",
)
@command_guard
def gate(report_path: str, policy_path: str, baseline_path: str | None) -> None:
    """Check REPORT.json against a policy: exit 0 when it holds, 1 naming each failed rule."""
    from .._eval_gate import GatePolicy, check_gate

    policy = GatePolicy.from_json(_read(policy_path))
    report = _report(report_path)
    baseline = _report(baseline_path) if baseline_path is not None else None
    failed = check_gate(report, policy, baseline)
    for line in failed:
        click.echo(f"failed: {printable(line)}")
    if failed:
        fail(f"the gate failed: {len(failed)} of the policy's checks did not hold", FAILED)
    checks = len(policy.rules) + sum(
        value is not None for value in (policy.min_samples, policy.max_cost)
    )
    if policy.max_regression is not None and baseline is not None:
        checks += 1
    click.echo(f"the gate holds ({checks} checks)")


@eval_group.command("show")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@click.option(
    "--html",
    "html_path",
    default=None,
    metavar="PATH",
    help="Also write a self-contained HTML page of the report here.",
)
@command_guard
def show(report_path: str, html_path: str | None) -> None:
    """Print REPORT.json's side-by-side table; --html writes a page with every case."""
    report = _report(report_path)
    print_table(report)
    if html_path is not None:
        from .._eval_html import report_html

        _write(html_path, report_html(report))


def _read(path: str) -> str:
    try:
        size = Path(path).stat().st_size
        if size > _MAX_FILE:
            usage(f"{path} is {size} bytes, past the limit of {_MAX_FILE}")
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        usage(f"no such file: {path}")
    except UnicodeDecodeError:
        usage(f"{path} is not UTF-8 text")
    except OSError as error:
        usage(f"cannot read {path}: {error.strerror or error}")


def _report(path: str) -> EvalReport:
    from .._eval_report import EvalReport, InvalidReportError

    try:
        return EvalReport.from_json(_read(path))
    except InvalidReportError as error:
        usage(f"{path}: {error}")


def _write(path: str, text: str) -> None:
    if path == "-":
        click.echo(text, nl=False)
        return
    try:  # a report's folder is made, as `-o reports/today.json` in CI expects
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        usage(f"cannot write {path}: {error.strerror or error}")
