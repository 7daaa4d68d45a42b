"""The view of a team run while it runs: one row per task, fed by progress events.

``TaskBoard`` is the state (each task's state, assignee, attempts, elapsed time, tokens, cost
and the budget left), updated by ``apply(event)`` from the run's ``on_progress`` events; it
knows nothing of terminals. ``RunView`` shows it: in a terminal a rich ``Live`` table redrawn
in place (refreshed from the event loop, so no thread reads the board while the run changes
it), elsewhere one plain line per state change, so a log or a pipe reads top to bottom.
Titles, names and errors come from files and models: both show them through ``printable``
(control characters escaped) and never as rich markup.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import attrs

from ..budgets import Price
from ..providers import Usage

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.table import Table

    from ..budgets import Budget
    from ..progress import ProgressEvent

__all__ = ["RunView", "TaskBoard", "TaskRow", "printable", "printable_json", "usage_json"]

#: What a terminal acts on rather than shows, besides the C0 controls (ESC, BEL, CR, ...):
#: DEL, the C1 controls (U+009B is a CSI of its own) and the bidirectional overrides that
#: reorder text. ``json.dumps(ensure_ascii=False)`` escapes C0 but leaves these raw.
_ACTED_ON = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNPRINTABLE = re.compile(f"[\x00-\x1f{_ACTED_ON}]")
_RAW_IN_JSON = re.compile(f"[{_ACTED_ON}]")


def printable(text: str) -> str:
    r"""``text`` with every control character written as its escape (``\x1b``, ``\x07``,
    ``\u202e``): a title from a plan or a coordinator's answer is shown, never obeyed."""
    return _UNPRINTABLE.sub(lambda found: found.group().encode("unicode_escape").decode(), text)


def printable_json(text: str) -> str:
    """JSON text with what ``json.dumps(ensure_ascii=False)`` leaves raw and a terminal acts
    on escaped as ``\\uXXXX`` (still the same JSON: these only occur inside strings)."""
    return _RAW_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


#: Where a task stands in the view: the core's task states ("waiting": its run waits for
#: approval decisions), "retrying", and "cancelled" for a task that was running when the run
#: was interrupted.
FINISHED = ("completed", "failed", "skipped", "cancelled")
_STYLES = {
    "pending": "dim",
    "running": "yellow",
    "retrying": "yellow",
    "waiting": "cyan",
    "completed": "green",
    "failed": "red",
    "skipped": "dim",
    "cancelled": "magenta",
}
#: The live table is redrawn at most every ``_TICK`` seconds when something changed, and
#: every ``_TICK * _REDRAW`` seconds anyway (the elapsed times move).
_TICK, _REDRAW = 0.1, 5
#: Screen lines that are not task rows: the headline, the table's borders and header, the
#: line for rows left out, and one spare.
_CHROME = 7


def usage_json(usage: Usage) -> dict[str, int]:
    """``usage`` as ``--json`` prints it: every count, the cache and reasoning parts too."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


@attrs.define
class TaskRow:
    """One task as the view shows it; ``usage`` sums every attempt."""

    title: str
    assignee: str | None
    state: str = "pending"
    attempts: int = 0
    usage: Usage = Usage()
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    #: The calls a waiting task's run asks approval for: ``tool call_id`` each.
    asking: list[str] = attrs.Factory(list)

    @property
    def tokens(self) -> int:
        return self.usage.input_tokens + self.usage.output_tokens


@attrs.define
class TaskBoard:
    """Every task of one team run, as its progress events tell it.

    ``coordinator`` names a ``run_team`` coordinator: its two runs (the plan, the final
    answer) get rows of their own. Rows for tasks the board was not told of in advance (a
    coordinator's plan) are added as their first event arrives. ``budget`` is the team run's
    shared ``Budget``: the headline shows what is left of it, as the ledger says (it counts
    what the runs were charged, estimates for failed calls included).
    """

    name: str
    rows: dict[str, TaskRow] = attrs.Factory(dict)
    coordinator: str | None = None
    prices: Price | None = None
    budget: Budget | None = None
    clock: Callable[[], float] = time.monotonic
    _coordinator_rows: list[str] = attrs.Factory(list)

    def add(self, title: str, assignee: str | None) -> TaskRow:
        row = self.rows.get(title)
        if row is None:
            row = self.rows[title] = TaskRow(title, assignee)
        return row

    # -- events --------------------------------------------------------------------------------

    def apply(self, event: ProgressEvent) -> str | None:
        """Take in one event; return the plain line for it when it changed a task's state."""
        if event.task is None:
            return self._coordinator_event(event)
        row = self.add(event.task, event.agent)
        kind, data = event.type, event.data
        if event.agent is not None:
            row.assignee = event.agent
        if kind == "task_start":
            row.state, row.attempts, row.started = "running", 1, self.clock()
            row.asking = []
            return f"{row.title}: running ({row.assignee})"
        if kind == "task_retry":
            row.state = "retrying"
            row.attempts = int(data.get("attempt", row.attempts + 1))
            return f"{row.title}: retrying ({row.assignee}, attempt {row.attempts})"
        if kind == "agent_start" and row.state == "retrying":
            row.state = "running"
            return None
        if kind == "agent_complete":
            self._charge(row, data.get("usage"))
            return None
        if kind == "task_complete":
            row.state, row.ended = "completed", self.clock()
            return f"{row.title}: completed ({self._facts(row)}){self._left()}"
        if kind == "task_failed":
            row.state, row.ended = "failed", self.clock()
            row.error = _one_line(data.get("error"))
            return f"{row.title}: failed ({self._facts(row)}): {row.error}{self._left()}"
        if kind == "task_skipped":
            row.state = "skipped"
            return f"{row.title}: skipped (a task it depends on did not complete)"
        return self._approval_event(row, kind, data)

    def _approval_event(self, row: TaskRow, kind: str, data: dict[str, Any]) -> str | None:
        """A durable team run's task asks for approval and waits for decisions (resumed, it
        starts again: ``task_start``)."""
        if kind == "approval_requested":
            row.asking.append(f"{data.get('tool')} {data.get('call_id')}")
            return None
        if kind == "run_suspended":
            row.state = "waiting"
            calls = ", ".join(row.asking) or ", ".join(map(str, data.get("pending", ())))
            return f"{row.title}: waiting for approval ({row.assignee}): {calls}"
        return None

    def _coordinator_event(self, event: ProgressEvent) -> str | None:
        if self.coordinator is None or event.agent != self.coordinator:
            return None
        if event.type == "agent_start":
            title = "(plan)" if not self._coordinator_rows else "(answer)"
            self._coordinator_rows.append(title)
            row = self.add(title, event.agent)
            row.state, row.attempts, row.started = "running", 1, self.clock()
            return f"{title}: running ({event.agent})"
        if event.type == "agent_complete" and self._coordinator_rows:
            row = self.rows[self._coordinator_rows[-1]]
            self._charge(row, event.data.get("usage"))
            row.ended = self.clock()
            row.state = "completed" if event.data.get("success") else "failed"
            return f"{row.title}: {row.state} ({self._facts(row)})"
        if event.type == "error" and self._coordinator_rows:
            row = self.rows[self._coordinator_rows[-1]]
            row.error = _one_line(event.data.get("error"))
            # After the run ended: its answer held no plan (the run itself went well, or
            # failed its structured-output check); the plan's error is the row's last word.
            if row.state in ("completed", "failed"):
                row.state = "failed"
                return f"{row.title}: failed: {row.error}"
        return None

    def _charge(self, row: TaskRow, usage: Any) -> None:
        if isinstance(usage, Usage):
            row.usage = row.usage + usage

    def interrupt(self) -> None:
        """The run was cancelled: what was running or retrying is now "cancelled"."""
        now = self.clock()
        for row in self.rows.values():
            if row.state in ("running", "retrying"):
                row.state, row.ended = "cancelled", now

    # -- what is shown ------------------------------------------------------------------------

    def cost(self, row: TaskRow | None = None) -> float | None:
        if self.prices is None:
            return None
        rows = self.rows.values() if row is None else (row,)
        return sum(self.prices(r.usage) for r in rows)

    def elapsed(self, row: TaskRow) -> str:
        if row.started is None:
            return ""
        end = row.ended if row.ended is not None else self.clock()
        return f"{max(0.0, end - row.started):.1f}s"

    def budget_left(self) -> str | None:
        """What is left of the shared budget, e.g. ``4,321 of 5,000 tokens``."""
        budget = self.budget
        if budget is None:
            return None
        parts = []
        if budget.max_tokens is not None:
            left = max(0, math.floor(budget.max_tokens - budget.used_tokens))
            parts.append(f"{left:,} of {math.floor(budget.max_tokens):,} tokens")
        if budget.max_cost is not None:
            left_cost = max(0.0, budget.max_cost - budget.used_cost)
            parts.append(f"${left_cost:.4f} of ${budget.max_cost:.4f}")
        return " and ".join(parts) or None

    def _left(self) -> str:
        left = self.budget_left()
        return "" if left is None else f"; budget left: {left}"

    def _facts(self, row: TaskRow) -> str:
        attempts = f"{row.attempts} attempt{'s' if row.attempts != 1 else ''}"
        facts = [str(row.assignee), attempts, f"{row.tokens:,} tokens"]
        cost = self.cost(row)
        if cost is not None:
            facts.append(f"${cost:.4f}")
        facts.append(self.elapsed(row))
        return ", ".join(facts)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows.values():
            counts[row.state] = counts.get(row.state, 0) + 1
        return counts

    def headline(self) -> str:
        done = sum(1 for row in self.rows.values() if row.state in FINISHED)
        tokens = sum(row.tokens for row in self.rows.values())
        parts = [f"team {self.name}", f"{done} of {len(self.rows)} done", f"{tokens:,} tokens"]
        cost = self.cost()
        if cost is not None:
            parts.append(f"${cost:.4f}")
        left = self.budget_left()
        if left is not None:
            parts.append(f"budget left: {left}")
        return " · ".join(parts)

    def summary(self) -> list[str]:
        """What finished, for the end of an interrupted run: one line per state."""
        lines = []
        labels = {"pending": "not started", "waiting": "waiting for approval"}
        for state in ("completed", "failed", "skipped", "cancelled", "waiting", "pending"):
            titles = [row.title for row in self.rows.values() if row.state == state]
            if titles:
                label = labels.get(state, state)
                lines.append(f"{label}: {', '.join(titles)}")
        return lines

    def view(self, max_rows: int | None = None) -> RenderableType:
        """The headline, the table, and a line for the rows left out (at most ``max_rows``
        rows are shown: a terminal shows only so many, and a big graph has thousands)."""
        from rich.console import Group
        from rich.text import Text

        rows, hidden = self.shown(max_rows)
        headline = Text(printable(self.headline()), style="bold")
        parts: list[RenderableType] = [headline, self.table(rows)]
        if hidden:
            counts = ", ".join(f"{count:,} {state}" for state, count in hidden.items())
            parts.append(Text(f"... and {sum(hidden.values()):,} more: {counts}", style="dim"))
        return Group(*parts)

    def shown(self, max_rows: int | None) -> tuple[list[TaskRow], dict[str, int]]:
        """The rows to show, in plan order, and how many of each state are left out: what
        is going on (running, retrying) and what went wrong come first, then what is next."""
        rows = list(self.rows.values())
        if max_rows is None or len(rows) <= max_rows:
            return rows, {}
        limit = max(1, max_rows - 1)  # one line says what is left out

        def urgency(index: int) -> int:
            state = rows[index].state
            if state in ("running", "retrying", "waiting", "failed", "cancelled"):
                return 0
            return 1 if state == "pending" else 2

        chosen = set(sorted(range(len(rows)), key=lambda i: (urgency(i), i))[:limit])
        hidden: dict[str, int] = {}
        for index, row in enumerate(rows):
            if index not in chosen:
                hidden[row.state] = hidden.get(row.state, 0) + 1
        return [rows[i] for i in sorted(chosen)], hidden

    def table(self, rows: list[TaskRow] | None = None) -> Table:
        from rich.table import Table
        from rich.text import Text

        table = Table(expand=False)
        table.add_column("Task", overflow="fold")
        table.add_column("Assignee")
        table.add_column("State")
        table.add_column("Attempt", justify="right")
        table.add_column("Elapsed", justify="right")
        table.add_column("Tokens", justify="right")
        table.add_column("Cost", justify="right")
        for row in self.rows.values() if rows is None else rows:
            cost = self.cost(row)
            cells: list[Any] = [  # Text, not str: a "[red]" in a title is no markup
                Text(printable(row.title)),
                Text(printable(row.assignee or "")),
                Text(row.state, style=_STYLES.get(row.state, "")),
                str(row.attempts) if row.attempts else "",
                self.elapsed(row),
                f"{row.tokens:,}" if row.attempts else "",
                "" if cost is None else f"${cost:.4f}",
            ]
            table.add_row(*cells)
        return table


def _one_line(error: object) -> str:
    text = str(error) if error is not None else "unknown error"
    return " ".join(text.split()) or type(error).__name__


class RunView:
    """Shows a ``TaskBoard`` while a run goes: a live table on a terminal, else plain lines.

    Use it as the run's ``on_progress`` observer and as an async context manager around the
    run: entering starts the live table, leaving (also by cancellation) marks the running
    tasks cancelled when interrupted, draws the last state and stops.
    """

    def __init__(self, board: TaskBoard, stream: IO[str], *, live: bool) -> None:
        self.board = board
        self.stream = stream
        self.live = live
        self._live: Live | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._changed = False

    def __call__(self, event: ProgressEvent) -> None:
        line = self.board.apply(event)
        if self.live:
            self._changed = True  # drawn at the next tick: events may come thousands a second
        elif line is not None:
            self.stream.write(printable(line) + "\n")
            self.stream.flush()

    async def __aenter__(self) -> RunView:
        if self.live:
            from rich.live import Live

            console = self._console()
            self._live = Live(
                get_renderable=lambda: self.board.view(max(3, console.height - _CHROME)),
                console=console,
                auto_refresh=False,
                transient=False,
                # Lines others print while the table is up (a plugin's, a library's logs)
                # go above it instead of breaking it; stdout only when the table is there.
                redirect_stdout=self.stream is sys.stdout,
                redirect_stderr=True,
            )
            self._live.start(refresh=True)
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None and issubclass(kind, asyncio.CancelledError | KeyboardInterrupt):
            self.board.interrupt()
        ticker, self._ticker = self._ticker, None
        if ticker is not None:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
        self.stop()

    def stop(self) -> None:
        """Draw the last state and leave it on the screen (safe to call twice)."""
        live, self._live = self._live, None
        if live is not None:
            live.refresh()
            live.stop()

    async def _tick(self) -> None:
        ticks = 0
        while self._live is not None:
            await asyncio.sleep(_TICK)
            ticks += 1
            if self._live is not None and (self._changed or ticks % _REDRAW == 0):
                self._changed = False
                self._live.refresh()

    def _console(self) -> Console:
        from rich.console import Console

        return Console(file=self.stream, force_terminal=True)
