"""``oma tasks`` and ``oma team``, through the real command in a subprocess.

What a person sees is checked as they would see it: under a pseudo-terminal the live table is
read off a small terminal screen (cursor moves and line erases applied), piped output as plain
lines. Nothing here waits on the clock: a test waits for a line or a screen to show what it
expects, and the generous ``TIMEOUT`` only stops a test that would otherwise hang.
"""

from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from _builders import ROOT, builtin_host
from hypothesis import given
from hypothesis import strategies as st

from oma_core import AgentConfig, OpenMultiAgent, ProgressEvent, ProviderError, TaskSpec, Team
from oma_core.cli._live import RunView, TaskBoard, printable
from oma_core.testing import ScriptedProvider

TIMEOUT = 60.0  # a failure guard only; every test ends as soon as the command does
ENTRY = "from oma_core.cli import main; main()"
ROWS, COLUMNS = 40, 120


def command(*args: str) -> list[str]:
    return [sys.executable, "-W", "error::ResourceWarning", "-c", ENTRY, *args]


#: What would change how rich or oma behave, whatever the machine running the tests set.
_UNSET = (
    "FORCE_COLOR",
    "NO_COLOR",
    "COLUMNS",
    "LINES",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "OMA_PROVIDER",
    "OMA_DISABLE_PLUGINS",
    "OPENAI_API_KEY",
)


def environment(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env.update(OMA_LOAD_PLUGINS="", TERM="xterm-256color", PYTHONUNBUFFERED="1")
    env.update(changes)
    return env


def default_sigint() -> None:
    # Whatever the test runner did with SIGINT, the command gets Python's usual handling.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def oma(
    *args: str, cwd: Path = ROOT, input: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(*args),
        input=input,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment(**env),
        timeout=TIMEOUT,
        preexec_fn=default_sigint,
    )


def write(path: Path, data: Any) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def echo_agent(name: str) -> dict[str, Any]:
    return {"name": name, "provider": "echo"}


def scripted_agent(name: str, *responses: Any) -> dict[str, Any]:
    return {
        "name": name,
        "provider": "scripted",
        "provider_options": {"responses": list(responses)},
    }


def task(title: str, assignee: str, *depends_on: str, **more: Any) -> dict[str, Any]:
    return {
        "title": title,
        "description": f"Do {title}.",
        "assignee": assignee,
        "depends_on": list(depends_on),
        **more,
    }


#: One task finishes at once, one waits until it is cancelled: for Ctrl-C.
SLOW_PLAN = {
    "name": "slow-team",
    "max_concurrency": 2,
    "agents": [
        echo_agent("quickly"),
        scripted_agent("slowly", {"delay": 3600, "response": "late"}),
    ],
    "tasks": [task("quick", "quickly"), task("slow", "slowly"), task("after", "quickly", "slow")],
}


@pytest.fixture(autouse=True)
def own_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test's commands keep what they keep (the team runs' ``runs.db``) in a home of
    their own, never the user's."""
    monkeypatch.setenv("OMA_HOME", str(tmp_path / "oma-home"))


@pytest.fixture
def slow_plan(tmp_path: Path) -> str:
    return write(tmp_path / "slow.json", SLOW_PLAN)


# -- a terminal screen, as a person sees it ----------------------------------------------------

_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class Screen:
    """Just enough of a terminal for rich's output: text, CR/LF, cursor up/down/column, erase
    in line and display; colours and modes are ignored."""

    def __init__(self) -> None:
        self.lines: list[list[str]] = [[]]
        self.row = self.col = 0

    def feed(self, text: str) -> None:
        index = 0
        while index < len(text):
            char = text[index]
            if char == "\x1b":
                match = _CSI.match(text, index) or _OSC.match(text, index)
                if match is not None and match.re is _CSI:
                    self._control(match.group(1), match.group(2))
                index = match.end() if match is not None else index + 2
                continue
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self._move(self.row + 1)
            elif char >= " ":
                line = self.lines[self.row]
                line.extend(" " * (self.col + 1 - len(line)))
                line[self.col] = char
                self.col += 1
            index += 1

    def _move(self, row: int) -> None:
        self.row = max(0, row)
        while len(self.lines) <= self.row:
            self.lines.append([])

    def _control(self, params: str, final: str) -> None:
        number = int(params) if params.isdigit() else None
        line = self.lines[self.row]
        if final == "A":
            self._move(self.row - (number or 1))
        elif final == "B":
            self._move(self.row + (number or 1))
        elif final == "G":
            self.col = (number or 1) - 1
        elif final == "K":
            if params == "2":
                line.clear()
            elif params in ("", "0"):
                del line[self.col :]
            else:
                line[: self.col] = " " * min(self.col, len(line))
        elif final == "J" and params in ("", "0"):
            del line[self.col :]
            del self.lines[self.row + 1 :]

    def text(self) -> str:
        return "\n".join("".join(line).rstrip() for line in self.lines).strip("\n")

    def row_of(self, title: str) -> str:
        """The table row whose first cell is ``title``."""
        for line in self.text().splitlines():
            cells = [cell.strip() for cell in line.strip("│┃ ").split("│")]
            if cells and cells[0] == title:
                return line
        return ""


class Terminal:
    """The command running on a pseudo-terminal (its controlling terminal), like in a shell."""

    def __init__(self, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> None:
        env = env or environment()
        pid, fd = pty.fork()
        if pid == 0:  # the child: a terminal of a known size, then the command
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
                os.chdir(cwd)
                default_sigint()
                os.execve(sys.executable, command(*args), env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.raw = ""
        self.screen = Screen()
        self.status: int | None = None

    def read_until(self, done: Callable[[Screen], bool]) -> None:
        """Read what the command writes until ``done(screen)`` or the command ends."""
        while not done(self.screen):
            ready, _, _ = select.select([self.fd], [], [], TIMEOUT)
            if not ready:
                self.kill()
                raise AssertionError(f"no output for {TIMEOUT}s; the screen:\n{self.screen.text()}")
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: the command ended and closed the terminal
                chunk = b""
            if not chunk:
                return
            text = chunk.decode("utf-8", errors="replace")
            self.raw += text
            self.screen.feed(text)

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def wait(self) -> int:
        self.read_until(lambda screen: False)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for terminal in started:
        if terminal.status is None:
            terminal.kill()
            terminal.wait()


def on_terminal(started: list[Terminal], *args: str, **env: str) -> Terminal:
    terminal = Terminal(*args, env=environment(**env))
    started.append(terminal)
    return terminal


def test_the_screen_applies_cursor_moves_and_erases() -> None:
    screen = Screen()
    screen.feed("one\r\ntwo\r\n\x1b[1A\x1b[2K\x1b[1A\x1b[2K\r\x1b[31mONE\x1b[0m\r\nTWO\r\n")
    assert screen.text() == "ONE\nTWO"


# -- running a plan ----------------------------------------------------------------------------


def test_the_example_plan_runs_offline_and_prints_the_final_task_output() -> None:
    result = oma("tasks", "examples/PLAN.json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    # caption depends on the other two: its output is the graph's one result
    headings = [line for line in result.stdout.splitlines() if line.startswith("## ")]
    assert headings == ["## caption"]


def test_piped_output_is_one_plain_line_per_state_change() -> None:
    result = oma("tasks", "examples/PLAN.json")
    lines = result.stdout.split("\n\n")[0].splitlines()
    assert "\x1b" not in result.stdout
    states = [re.match(r"^(\w+): (\w+)", line).groups() for line in lines]  # type: ignore[union-attr]
    assert sorted(states) == sorted(
        (title, state)
        for title in ("describe", "facts", "caption")
        for state in ("running", "completed")
    )
    # caption starts only after both tasks it depends on completed
    assert states.index(("caption", "running")) > states.index(("describe", "completed"))
    assert states.index(("caption", "running")) > states.index(("facts", "completed"))
    assert re.fullmatch(
        r"caption: completed \(writer, 1 attempt, [\d,]+ tokens, \d+\.\ds\)", lines[-1]
    )


def test_json_prints_the_team_run_result_the_api_gives() -> None:
    result = oma("tasks", "examples/PLAN.json", "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)

    plan = json.loads((ROOT / "examples" / "PLAN.json").read_text(encoding="utf-8"))
    agents = [AgentConfig(**agent) for agent in plan["agents"]]
    team = Team(plan["name"], agents, max_concurrency=plan["max_concurrency"])
    specs = [TaskSpec(**{**t, "depends_on": tuple(t.get("depends_on", ()))}) for t in plan["tasks"]]
    expected = asyncio.run(OpenMultiAgent(plugins=builtin_host()).run_tasks(team, specs))

    assert printed["success"] is True and printed["error"] is None
    assert list(printed["tasks"]) == ["describe", "facts", "caption"]
    for title, record in expected.tasks.items():
        shown = printed["tasks"][title]
        assert shown["status"] == record.status == "completed"
        assert shown["output"] == record.output
        assert shown["attempts"] == record.attempts == 1
        assert shown["assignee"] == record.assignee
        assert shown["usage"] == attrs.asdict(record.usage)
        assert shown["error"] is None and shown["cost"] is None
    assert printed["usage"] == attrs.asdict(expected.usage)
    assert [t["title"] for t in printed["plan"]] == ["describe", "facts", "caption"]
    assert printed["plan"][2]["depends_on"] == ["describe", "facts"]
    # the view went to stderr, so stdout is the JSON alone
    assert "caption: completed" in result.stderr


def test_a_failed_task_skips_what_depends_on_it_and_exits_1(tmp_path: Path) -> None:
    plan = {
        "agents": [echo_agent("ok"), scripted_agent("broken")],  # no responses: it fails
        "tasks": [task("first", "broken"), task("second", "ok", "first"), task("other", "ok")],
    }
    result = oma("tasks", write(tmp_path / "plan.json", plan), "--json")
    assert result.returncode == 1
    printed = json.loads(result.stdout)
    assert printed["success"] is False
    statuses = {title: shown["status"] for title, shown in printed["tasks"].items()}
    assert statuses == {"first": "failed", "second": "skipped", "other": "completed"}
    assert "exhausted" in printed["tasks"]["first"]["error"]
    assert result.stderr.splitlines()[-1] == "error: 1 task failed: first"
    assert "second: skipped" in result.stderr


def test_the_view_counts_a_retried_task_s_attempts() -> None:
    # Driven by a real run (in process: a plan file cannot script an exception): a retryable
    # 503 makes the task run again under its max_retries; the view follows the events.
    provider = ScriptedProvider([ProviderError("busy", status_code=503), "done"])
    team = Team("t", [AgentConfig("flaky", provider=provider, max_retries=0)])
    board = TaskBoard("t")
    board.add("only", "flaky")
    lines = io.StringIO()
    view = RunView(board, lines, live=False)

    async def run() -> None:
        oma = OpenMultiAgent(on_progress=view, plugins=builtin_host())
        async with view:
            outcome = await oma.run_tasks(team, [TaskSpec("only", "Do it.", max_retries=1)])
        assert outcome.tasks["only"].attempts == 2

    asyncio.run(run())
    shown = lines.getvalue().splitlines()
    assert shown[0] == "only: running (flaky)"
    assert shown[1] == "only: retrying (flaky, attempt 2)"
    assert re.fullmatch(r"only: completed \(flaky, 2 attempts, [\d,]+ tokens, \d+\.\ds\)", shown[2])
    assert len(shown) == 3
    assert board.rows["only"].attempts == 2 and board.rows["only"].state == "completed"


def _approval_team() -> tuple[Team, tuple[TaskSpec, ...]]:
    """A team whose "pay" task calls a tool that needs approval (a plan file cannot declare
    one: its agents have no tools of code), beside an independent "note"."""
    from oma_core import tool

    def pay(amount: int) -> str:
        """Pay an invoice."""
        return f"paid {amount}"

    call = {"type": "tool_use", "id": "p1", "name": "pay", "input": {"amount": 5}}
    payer = AgentConfig(
        "payer",
        provider=ScriptedProvider([{"role": "assistant", "content": [call]}, "paid"]),
        tools=[tool(pay, needs_approval=True)],
    )
    writer = AgentConfig("writer", provider=ScriptedProvider(["noted", "reported"]))
    plan = (
        TaskSpec("pay", "Pay.", "payer"),
        TaskSpec("note", "Note.", "writer"),
        TaskSpec("report", "Report.", "writer", depends_on=("pay", "note")),
    )
    return Team("office", [payer, writer], max_concurrency=1), plan


def _suspended(view: RunView) -> tuple[OpenMultiAgent, Team, Any]:
    """A durable team run, driven in process with ``view`` watching, that suspends."""
    team, plan = _approval_team()
    for spec in plan:  # as the command does: every task has its row from the start
        view.board.add(spec.title, spec.assignee)
    oma = OpenMultiAgent(on_progress=view, plugins=builtin_host(), store="memory")

    async def run() -> Any:
        async with view:
            return await oma.run_tasks(team, plan, run_id="office")

    outcome = asyncio.run(run())
    assert outcome.suspended
    return oma, team, outcome


def test_the_view_shows_a_task_waiting_for_approval() -> None:
    board = TaskBoard("office")
    lines = io.StringIO()
    view = RunView(board, lines, live=False)
    oma, team, _ = _suspended(view)
    shown = lines.getvalue().splitlines()
    assert shown[:2] == ["pay: running (payer)", "pay: waiting for approval (payer): pay p1"]
    assert shown[2] == "note: running (writer)" and shown[3].startswith("note: completed")
    assert len(shown) == 4  # "report" waits with "pay": it never started
    assert board.rows["pay"].state == "waiting"
    assert "team office · 1 of 3 done" in board.headline()  # waiting is not done
    summary = ["completed: note", "waiting for approval: pay", "not started: report"]
    assert board.summary() == summary
    from rich.console import Console

    console = Console(record=True, width=COLUMNS, file=io.StringIO())
    console.print(board.table())
    (row,) = [line for line in console.export_text().splitlines() if "pay" in line]
    assert "waiting" in row

    lines.truncate(0)
    lines.seek(0)

    async def resumed() -> Any:
        async with view:
            return await oma.resume("office", team=team, approvals={"p1": True})

    done = asyncio.run(resumed())
    assert done.success
    shown = lines.getvalue().splitlines()
    assert shown[0] == "pay: running (payer)" and shown[1].startswith("pay: completed (payer")
    assert board.rows["pay"].state == "completed" and board.rows["pay"].asking == []


def test_tasks_prints_the_calls_a_suspended_team_run_waits_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from oma_core.cli._tasks import RunOptions, print_outcome

    board = TaskBoard("office")
    _, _, outcome = _suspended(RunView(board, io.StringIO(), live=False))
    capsys.readouterr()
    options = RunOptions(None, (), False, None, None, None)
    print_outcome(outcome, board, options, answer=False)  # suspended: no exit status 1
    printed = capsys.readouterr()
    assert printed.out == ""  # "note" finished, but "report" (waiting) depends on it
    assert printed.err.splitlines() == [
        'waiting: p1  pay  {"amount": 5}  (task pay)',
        "approve or deny (oma runs approve|deny office CALL_ID), then: oma runs resume office",
    ]
    as_json = RunOptions(None, (), True, None, None, None)
    print_outcome(outcome, board, as_json, answer=False)
    data = json.loads(capsys.readouterr().out)
    assert [(r["call_id"], r["tool"], r["run_id"]) for r in data["pending"]] == [
        ("p1", "pay", "office/1")
    ]
    assert data["tasks"]["pay"]["status"] == "waiting" and not data["success"]


def test_what_others_print_while_the_table_is_up_goes_above_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A library's log line (Ray prints some as its cluster starts) must not break the table.
    monkeypatch.setenv("COLUMNS", str(COLUMNS))  # rich sizes the table to it, not to the test
    board = TaskBoard("t")
    board.add("only", "a")
    terminal = io.StringIO()
    view = RunView(board, terminal, live=True)

    async def run() -> None:
        async with view:
            print("a library's log line", file=sys.stderr)
            view(ProgressEvent("task_start", "a", "only"))

    asyncio.run(run())
    screen = Screen()
    screen.feed(terminal.getvalue().replace("\n", "\r\n"))
    lines = screen.text().splitlines()
    assert lines[0] == "a library's log line"
    assert lines[1].startswith("team t · 0 of 1 done")
    assert screen.text().count("Assignee") == 1
    assert "running" in screen.row_of("only")


def test_a_token_budget_is_shared_by_the_whole_graph(tmp_path: Path) -> None:
    # A budget of what one task spends: the first task fits it exactly, the second (run
    # after it) finds it spent, though it would fit the budget alone.
    alone = {"agents": [echo_agent("a")], "tasks": [task("one", "a")]}
    usage = json.loads(oma("tasks", write(tmp_path / "one.json", alone), "--json").stdout)["usage"]
    budget = str(usage["input_tokens"] + usage["output_tokens"])
    plan = {
        "max_concurrency": 1,
        "agents": [echo_agent("a")],
        "tasks": [task("one", "a"), task("two", "a")],
    }
    result = oma(
        "tasks", write(tmp_path / "plan.json", plan), "--json", "--max-token-budget", budget
    )
    assert result.returncode == 1
    printed = json.loads(result.stdout)
    assert printed["tasks"]["one"]["status"] == "completed"
    assert printed["tasks"]["two"]["status"] == "failed"
    assert "budget" in printed["tasks"]["two"]["error"].lower()
    assert result.stderr.splitlines()[-1] == "error: 1 task failed: two"


def test_the_view_shows_the_budget_left(tmp_path: Path, terminals: list[Terminal]) -> None:
    plan = {"agents": [echo_agent("a")], "tasks": [task("big", "a")]}
    path = write(tmp_path / "plan.json", plan)
    usage = json.loads(oma("tasks", path, "--json").stdout)["usage"]
    left = 1000 - usage["input_tokens"] - usage["output_tokens"]

    terminal = on_terminal(terminals, "tasks", path, "--max-token-budget", "1000")
    assert terminal.wait() == 0
    assert f"budget left: {left:,} of 1,000 tokens" in terminal.screen.text()

    piped = oma("tasks", path, "--max-token-budget", "1000")
    assert piped.stdout.splitlines()[1].endswith(f"; budget left: {left:,} of 1,000 tokens")


def test_a_cost_budget_with_prices_is_shared_and_shown(tmp_path: Path) -> None:
    # One USD per input token, output free: a budget of what one task costs; the first task
    # spends it exactly, the second finds it spent.
    prices = ("--price", "1e6", "0")
    alone = {"agents": [echo_agent("a")], "tasks": [task("one", "a")]}
    one = json.loads(oma("tasks", write(tmp_path / "one.json", alone), "--json", *prices).stdout)
    cost = one["cost"]
    assert cost == one["usage"]["input_tokens"] > 0
    plan = {
        "max_concurrency": 1,
        "agents": [echo_agent("a")],
        "tasks": [task("one", "a"), task("two", "a")],
    }
    path = write(tmp_path / "plan.json", plan)
    result = oma("tasks", path, "--json", *prices, "--max-cost-budget", str(cost))
    assert result.returncode == 1
    printed = json.loads(result.stdout)
    assert printed["tasks"]["one"]["status"] == "completed"
    assert printed["tasks"]["two"]["status"] == "failed"
    assert "budget" in printed["tasks"]["two"]["error"].lower()
    assert f"budget left: $0.0000 of ${cost:.4f}" in result.stderr


def test_prices_show_the_cost_of_each_task(tmp_path: Path) -> None:
    plan = {"agents": [echo_agent("a")], "tasks": [task("one", "a")]}
    result = oma("tasks", write(tmp_path / "plan.json", plan), "--json", "--price", "1e6", "0")
    printed = json.loads(result.stdout)
    assert printed["tasks"]["one"]["cost"] == printed["tasks"]["one"]["usage"]["input_tokens"]
    assert printed["cost"] == printed["usage"]["input_tokens"]


# -- files that cannot run ---------------------------------------------------------------------

_AGENTS = [echo_agent("a"), echo_agent("b")]
BROKEN = {
    "not JSON": ("{tasks: [", "is not valid JSON"),
    "a list": ("[]", "must be a JSON object, got array"),
    "no tasks": ({"agents": _AGENTS}, "tasks must be a non-empty list"),
    "no agents": ({"tasks": [task("x", "a")]}, "agents must be a non-empty list"),
    "unknown field": ({"agents": _AGENTS, "tasks": [], "taks": []}, "unknown field 'taks'"),
    "unknown task field": (
        {"agents": _AGENTS, "tasks": [{"title": "x", "description": "d", "depend_on": []}]},
        "tasks[0]: unknown field 'depend_on'",
    ),
    "unknown agent field": (
        {"agents": [{"name": "a", "modle": "m"}], "tasks": [task("x", "a")]},
        "agents[0]: unknown field 'modle'",
    ),
    "description not text": (
        {"agents": _AGENTS, "tasks": [{"title": "x", "description": 3}]},
        "tasks[0].description must be a string",
    ),
    "depends_on not a list": (
        {"agents": _AGENTS, "tasks": [{"title": "x", "description": "d", "depends_on": "y"}]},
        "tasks[0].depends_on must be a list of task titles",
    ),
    "unknown assignee": (
        {"agents": _AGENTS, "tasks": [task("x", "nobody")]},
        "assigned to 'nobody'",
    ),
    "unknown dependency": (
        {"agents": _AGENTS, "tasks": [task("x", "a", "ghost")]},
        "depends on unknown task 'ghost'",
    ),
    "duplicate titles": (
        {"agents": _AGENTS, "tasks": [task("x", "a"), task("x", "b")]},
        "two tasks are titled 'x'",
    ),
    "a cycle": (
        {"agents": _AGENTS, "tasks": [task("x", "a", "y"), task("y", "b", "x")]},
        "form a cycle",
    ),
    "duplicate agents": (
        {"agents": [echo_agent("a"), echo_agent("a")], "tasks": [task("x", "a")]},
        "agent names in a team must be unique",
    ),
    "bad concurrency": (
        {"agents": _AGENTS, "max_concurrency": 0, "tasks": [task("x", "a")]},
        "max_concurrency must be a whole number >= 1",
    ),
    "unknown provider": (
        {"agents": [{"name": "a", "provider": "nope"}], "tasks": [task("x", "a")]},
        "agent 'a':",
    ),
    "bad temperature": (
        {"agents": [{"name": "a", "temperature": "hot"}], "tasks": [task("x", "a")]},
        "agents[0]:",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_plan_that_cannot_run_is_refused_with_one_line_and_status_2(
    case: str, tmp_path: Path
) -> None:
    content, phrase = BROKEN[case]
    path = write(tmp_path / "plan.json", content)
    result = oma("tasks", path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("error: ")
    assert phrase in result.stderr


def test_a_missing_plan_file_is_refused_with_status_2(tmp_path: Path) -> None:
    result = oma("tasks", str(tmp_path / "absent.json"))
    assert result.returncode == 2
    assert result.stderr.startswith("error: no such file: ") and result.stderr.count("\n") == 1


def test_a_cost_budget_without_prices_is_refused(tmp_path: Path) -> None:
    result = oma("tasks", "examples/PLAN.json", "--max-cost-budget", "1")
    assert result.returncode == 2
    assert result.stderr == (
        "error: --max-cost-budget needs --price IN OUT (USD per million tokens) to price calls\n"
    )


def test_the_local_executor_gives_the_same_result() -> None:
    plain = json.loads(oma("tasks", "examples/PLAN.json", "--json").stdout)
    result = oma("tasks", "examples/PLAN.json", "--json", "--executor", "local")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == plain


def test_an_unknown_executor_is_refused_with_one_line() -> None:
    result = oma("tasks", "examples/PLAN.json", "--executor", "nowhere")
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: ") and "'nowhere'" in result.stderr


def test_an_executor_option_the_local_executor_does_not_take_is_refused() -> None:
    result = oma("tasks", "examples/PLAN.json", "--executor-option", "address", "auto")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "address" in result.stderr, result.stderr


# -- the live view -----------------------------------------------------------------------------


def test_on_a_terminal_a_live_table_shows_every_task_and_its_final_state(
    terminals: list[Terminal],
) -> None:
    terminal = on_terminal(terminals, "tasks", "examples/PLAN.json")
    assert terminal.wait() == 0
    screen = terminal.screen
    text = screen.text()
    for header in ("Task", "Assignee", "State", "Attempt", "Elapsed", "Tokens", "Cost"):
        assert header in text
    assert "team cat-desk · 3 of 3 done" in text
    for title, assignee in (("describe", "looker"), ("facts", "looker"), ("caption", "writer")):
        row = screen.row_of(title)
        assert assignee in row and "completed" in row, text
    # redrawn in place: the table was drawn several times, but is on the screen once
    assert terminal.raw.count("Assignee") > 1
    assert text.count("Assignee") == 1
    assert "## caption" in text


def test_a_graph_taller_than_the_terminal_shows_what_fits_and_counts_the_rest(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    titles = [f"t{index:02}" for index in range(ROWS + 20)]
    plan = {"agents": [echo_agent("a")], "tasks": [task(title, "a") for title in titles]}
    terminal = on_terminal(terminals, "tasks", write(tmp_path / "plan.json", plan))
    assert terminal.wait() == 0
    text = terminal.screen.text()
    table = text.split("\n\n## ")[0].splitlines()  # the view, before the results
    assert len(table) <= ROWS
    shown = [title for title in titles if terminal.screen.row_of(title)]
    assert shown == titles[: len(shown)]  # all completed: the first ones, in plan order
    more = re.search(r"\.\.\. and (\d+) more: (\d+) completed", text)
    assert more is not None, text
    assert int(more.group(1)) == int(more.group(2)) == len(titles) - len(shown)


def test_what_is_running_or_failed_is_shown_before_what_is_done() -> None:
    board = TaskBoard("t")
    for index in range(10):
        board.add(f"t{index}", "a").state = "completed"
    board.rows["t8"].state = "failed"
    board.rows["t9"].state = "pending"
    rows, hidden = board.shown(4)  # three rows and the line that counts the rest
    assert [row.title for row in rows] == ["t0", "t8", "t9"]  # in plan order
    assert hidden == {"completed": 7}
    assert board.shown(10) == (list(board.rows.values()), {})


def test_a_dumb_terminal_gets_plain_lines(terminals: list[Terminal]) -> None:
    terminal = on_terminal(terminals, "tasks", "examples/PLAN.json", TERM="dumb")
    assert terminal.wait() == 0
    assert "\x1b[" not in terminal.raw
    assert "describe: completed (looker, 1 attempt, " in terminal.screen.text()


def test_a_team_on_a_terminal_shows_the_coordinator_and_its_answer(
    terminals: list[Terminal],
) -> None:
    terminal = on_terminal(terminals, "team", "Caption the cat", "--agents", "examples/AGENTS.json")
    assert terminal.wait() == 0
    screen = terminal.screen
    for title in ("(plan)", "describe", "caption", "(answer)"):
        assert "completed" in screen.row_of(title), screen.text()
    assert "planner" in screen.row_of("(plan)")
    assert screen.text().endswith("A calm tabby cat, captioned: 'Monday, handled.'")


# -- a coordinator's plan ----------------------------------------------------------------------


def test_team_json_has_the_plan_the_tasks_and_the_answer() -> None:
    result = oma("team", "Caption the cat", "--agents", "examples/AGENTS.json", "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["success"] is True
    assert printed["output"] == "A calm tabby cat, captioned: 'Monday, handled.'"
    assert [t["title"] for t in printed["plan"]] == ["describe", "caption"]
    assert {t: r["status"] for t, r in printed["tasks"].items()} == {
        "describe": "completed",
        "caption": "completed",
    }
    lines = result.stderr.splitlines()
    assert lines[0] == "(plan): running (planner)" and lines[-1].startswith("(answer): completed")


def test_plan_only_prints_the_plan_and_runs_no_task() -> None:
    result = oma("team", "Caption the cat", "--agents", "examples/AGENTS.json", "--plan-only")
    assert result.returncode == 0, result.stderr
    assert "- describe [looker]: Describe the cat in one paragraph." in result.stdout
    assert "- caption [writer] (after describe): Write a one-line caption." in result.stdout
    assert "describe: running" not in result.stdout


def test_plan_only_json_has_the_plan_and_every_task_pending() -> None:
    result = oma(
        "team", "Caption the cat", "--agents", "examples/AGENTS.json", "--plan-only", "--json"
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert [t["title"] for t in printed["plan"]] == ["describe", "caption"]
    assert {t: r["status"] for t, r in printed["tasks"].items()} == {
        "describe": "pending",
        "caption": "pending",
    }
    assert printed["output"] == ""


def test_a_coordinator_file_plans_for_the_agents_file(tmp_path: Path) -> None:
    plan = {"tasks": [task("look", "a")]}
    coordinator = scripted_agent("boss", json.dumps(plan), "All looked at.")
    agents = write(tmp_path / "agents.json", {"agents": [echo_agent("a")]})
    boss = write(tmp_path / "boss.json", coordinator)
    result = oma("team", "Look", "--agents", agents, "--coordinator", boss, "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["output"] == "All looked at."
    assert printed["tasks"]["look"]["output"] == 'user: text "Do look."'
    assert result.stderr.splitlines()[0] == "(plan): running (boss)"


def test_a_broken_coordinator_file_is_refused_with_one_line(tmp_path: Path) -> None:
    agents = write(tmp_path / "agents.json", {"agents": [echo_agent("a")]})
    boss = write(tmp_path / "boss.json", {"name": "boss", "provider": 3})
    result = oma("team", "Look", "--agents", agents, "--coordinator", boss)
    assert result.returncode == 2
    assert result.stderr == f"error: {boss}.provider must be a provider's name\n"


def test_tasks_can_take_the_team_from_an_agents_file(tmp_path: Path) -> None:
    plan = write(tmp_path / "plan.json", {"tasks": [task("look", "looker")]})
    result = oma("tasks", plan, "--agents", "examples/AGENTS.json", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tasks"]["look"]["assignee"] == "looker"


def test_a_coordinator_without_a_plan_fails_the_team_with_status_1(tmp_path: Path) -> None:
    agents = write(tmp_path / "agents.json", {"agents": [echo_agent("a")]})
    result = oma("team", "Do it", "--agents", agents)  # the echo coordinator answers prose
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "error: invalid task plan: the coordinator's answer holds no JSON plan"
    )
    assert result.stdout.splitlines()[-1] == (
        "(plan): failed: invalid task plan: the coordinator's answer holds no JSON plan"
    )


# -- titles that would drive the terminal --------------------------------------------------------

#: A title from a hostile plan or coordinator: a window-title OSC ended by BEL, a screen clear,
#: an 8-bit CSI, rich markup that closes nothing, a right-to-left override.
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m[/]\u202e"
RAW = ("\x1b]", "\x07", "\x1b[2J", "\x9b", "\u202e")


def hostile_plan(tmp_path: Path) -> str:
    agents = [scripted_agent(f"agent{EVIL}", "fine.", "fine.")]
    tasks = [task(EVIL, f"agent{EVIL}"), task("after", f"agent{EVIL}", EVIL)]
    return write(tmp_path / "hostile.json", {"agents": agents, "tasks": tasks})


def assert_nothing_raw(text: str) -> None:
    assert not [raw for raw in RAW if raw in text], repr(text)


@given(st.text())
def test_printable_escapes_every_control_character_and_keeps_the_rest(text: str) -> None:
    shown = printable(text)
    assert not any(unicodedata.category(c) == "Cc" or c in "\u202e\u2066" for c in shown)
    if text.isprintable():
        assert shown == text


def test_piped_lines_show_a_hostile_title_escaped(tmp_path: Path) -> None:
    result = oma("tasks", hostile_plan(tmp_path))
    assert result.returncode == 0, result.stderr
    assert_nothing_raw(result.stdout + result.stderr)
    assert f"{printable(EVIL)}: completed (agent{printable(EVIL)}, 1 attempt" in result.stdout


def test_the_json_result_holds_a_hostile_title_escaped_and_intact(tmp_path: Path) -> None:
    result = oma("tasks", hostile_plan(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    assert_nothing_raw(result.stdout)
    assert json.loads(result.stdout)["tasks"][EVIL]["status"] == "completed"


def test_a_failed_hostile_task_is_named_escaped_in_the_error_line(tmp_path: Path) -> None:
    agents = [scripted_agent("a")]  # no responses: it fails
    plan = write(tmp_path / "plan.json", {"agents": agents, "tasks": [task(EVIL, "a")]})
    result = oma("tasks", plan)
    assert result.returncode == 1
    assert_nothing_raw(result.stdout + result.stderr)
    assert result.stderr.splitlines()[-1] == f"error: 1 task failed: {printable(EVIL)}"


def test_a_coordinator_s_hostile_plan_is_printed_escaped(tmp_path: Path) -> None:
    plan = {"tasks": [{"title": EVIL, "description": f"Do {EVIL}.", "assignee": "a"}]}
    agents = {"agents": [scripted_agent("a", json.dumps(plan))]}
    result = oma("team", "Goal", "--agents", write(tmp_path / "a.json", agents), "--plan-only")
    assert result.returncode == 0, result.stderr
    assert_nothing_raw(result.stdout + result.stderr)
    assert f"- {printable(EVIL)} [a]: Do {printable(EVIL)}." in result.stdout


def test_a_hostile_agent_that_cannot_run_is_refused_escaped(tmp_path: Path) -> None:
    agents = [{"name": f"a{EVIL}", "provider": f"nope{EVIL}"}, {"name": f"b{EVIL}"}]
    tasks = [task(EVIL, f"a{EVIL}"), task("second", f"b{EVIL}", "missing" + EVIL)]
    for plan in ({"agents": agents, "tasks": tasks[:1]}, {"agents": agents, "tasks": tasks}):
        result = oma("tasks", write(tmp_path / "plan.json", plan))
        assert result.returncode == 2
        assert_nothing_raw(result.stderr)
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


def test_the_live_table_shows_a_hostile_title_escaped(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    terminal = on_terminal(terminals, "tasks", hostile_plan(tmp_path))
    assert terminal.wait() == 0, terminal.screen.text()
    assert_nothing_raw(terminal.raw)
    assert "[/]" in terminal.screen.text()  # shown, not taken for markup
    assert "pwned" in terminal.screen.text()


# -- keys: as oma run finds them, checked before anything runs ---------------------------------

STORED = "sk-stored-0123456789"


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The oma-openai plugin's fake Chat Completions service on 127.0.0.1, taking only the
    ``STORED`` key (another key is a 401); skipped when the plugin is not installed."""
    pytest.importorskip("oma_openai")
    monkeypatch.syspath_prepend(str(ROOT / "plugins" / "oma-openai" / "tests"))
    from fake_openai import FakeChatCompletions

    with FakeChatCompletions(api_key=STORED) as server:
        yield server


@pytest.fixture
def keyed(openai_server: Any, tmp_path: Path) -> dict[str, str]:
    """The environment of a command with the openai plugin and its own ``$OMA_HOME``, where
    ``oma keys set openai --base-url`` stored ``STORED`` for the fake's host."""
    env = {"OMA_HOME": str(tmp_path / "home"), "OMA_LOAD_PLUGINS": "openai"}
    base = ["--base-url", openai_server.base_url]
    stored = oma("keys", "set", "openai", *base, input=f"{STORED}\n", **env)
    assert stored.returncode == 0, stored.stderr
    return env


def openai_agent(name: str, server: Any, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "provider": "openai",
        "model": "gpt-4o-mini",
        "base_url": server.base_url,
        **more,
    }


def keys_sent(server: Any) -> set[str]:
    return {request.headers["authorization"] for request in server.requests}


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_tasks_use_the_key_stored_with_oma_keys_set(
    openai_server: Any, keyed: dict[str, str], tmp_path: Path
) -> None:
    plan = write(
        tmp_path / "plan.json",
        {"agents": [openai_agent("writer", openai_server)], "tasks": [task("draft", "writer")]},
    )
    result = oma("tasks", plan, "--json", **keyed)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tasks"]["draft"]["status"] == "completed"
    assert keys_sent(openai_server) == {f"Bearer {STORED}"}
    assert STORED not in result.stdout + result.stderr


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_a_team_and_its_coordinator_use_the_stored_key(
    openai_server: Any, keyed: dict[str, str], tmp_path: Path
) -> None:
    from fake_openai import Reply

    plan = {"tasks": [{"title": "draft", "description": "Draft.", "assignee": "writer"}]}
    openai_server.reply(Reply(text=json.dumps(plan)), Reply(text="A draft."), Reply(text="Done."))
    agents = write(tmp_path / "agents.json", {"agents": [openai_agent("writer", openai_server)]})
    result = oma("team", "Write it", "--agents", agents, "--json", **keyed)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"] == "Done."
    assert len(openai_server.requests) == 3
    assert keys_sent(openai_server) == {f"Bearer {STORED}"}


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_the_key_stored_for_the_agents_host_beats_the_environment_variable(
    openai_server: Any, keyed: dict[str, str], tmp_path: Path
) -> None:
    plan = write(
        tmp_path / "plan.json",
        {"agents": [openai_agent("writer", openai_server)], "tasks": [task("draft", "writer")]},
    )
    result = oma("tasks", plan, OPENAI_API_KEY="sk-from-env", **keyed)
    assert result.returncode == 0, result.stderr
    assert keys_sent(openai_server) == {f"Bearer {STORED}"}


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_the_provider_wide_key_never_reaches_an_agents_custom_host(
    openai_server: Any, tmp_path: Path
) -> None:
    env = {"OMA_HOME": str(tmp_path / "home"), "OMA_LOAD_PLUGINS": "openai"}
    assert oma("keys", "set", "openai", input=f"{STORED}\n", **env).returncode == 0
    plan = write(
        tmp_path / "plan.json",
        {"agents": [openai_agent("writer", openai_server)], "tasks": [task("draft", "writer")]},
    )
    result = oma("tasks", plan, **env)
    assert result.returncode == 2
    assert "agent 'writer': OpenAI needs an API key" in result.stderr
    assert openai_server.requests == []


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_an_api_key_in_the_plan_beats_the_environment_and_the_store(
    openai_server: Any, keyed: dict[str, str], tmp_path: Path
) -> None:
    agent = openai_agent("writer", openai_server, api_key="sk-in-the-plan")
    plan = write(tmp_path / "plan.json", {"agents": [agent], "tasks": [task("draft", "writer")]})
    oma("tasks", plan, OPENAI_API_KEY="sk-from-env", **keyed)
    assert keys_sent(openai_server) == {"Bearer sk-in-the-plan"}


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_every_agent_that_cannot_run_is_refused_before_any_task_one_line_each(
    openai_server: Any, tmp_path: Path
) -> None:
    agents = [
        echo_agent("fine"),
        openai_agent("keyless", openai_server),
        {"name": "lost", "provider": "nope"},
        {"name": "typo", "provider": "scripted", "provider_options": {"respones": []}},
    ]
    tasks = [task(agent["name"], agent["name"]) for agent in agents]
    plan = write(tmp_path / "plan.json", {"agents": agents, "tasks": tasks})
    home = str(tmp_path / "home")
    result = oma("tasks", plan, OMA_HOME=home, OMA_LOAD_PLUGINS="openai")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(":")[0:2] for line in lines] == [
        ["error", " agent 'keyless'"],
        ["error", " agent 'lost'"],
        ["error", " agent 'typo'"],
    ]
    assert "needs an API key and has none" in lines[0]
    host = openai_server.base_url.removesuffix("/v1")  # a key is stored per host
    assert f"`oma keys set openai --base-url {host}`" in lines[0]
    assert "'nope'" in lines[1] and "respones" in lines[2]
    assert openai_server.requests == []


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_a_keys_file_that_cannot_be_trusted_stops_the_team_with_one_line(
    openai_server: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    os.mkfifo(home / "keys.json")
    plan = write(
        tmp_path / "plan.json",
        {"agents": [openai_agent("writer", openai_server)], "tasks": [task("draft", "writer")]},
    )
    result = oma("tasks", plan, OMA_HOME=str(home), OMA_LOAD_PLUGINS="openai")
    assert result.returncode == 2
    assert result.stderr == f"error: {home / 'keys.json'} is a FIFO, not a keys file; remove it\n"
    assert openai_server.requests == []


# -- Ctrl-C ------------------------------------------------------------------------------------


def read_lines_until(process: subprocess.Popen[str], *wanted: str) -> str:
    """Read the command's stdout until a line starting with each of ``wanted`` appeared."""
    assert process.stdout is not None
    seen = ""
    while not all(any(line.startswith(w) for line in seen.splitlines()) for w in wanted):
        ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
        line = process.stdout.readline() if ready else ""
        if not line:
            process.kill()
            raise AssertionError(f"the command stopped before {wanted}; it wrote:\n{seen}")
        seen += line
    return seen


def test_ctrl_c_cancels_the_run_prints_what_finished_and_exits_130(slow_plan: str) -> None:
    process = subprocess.Popen(
        command("tasks", slow_plan),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=environment(),
        preexec_fn=default_sigint,
    )
    try:
        read_lines_until(process, "quick: completed (", "slow: running (slowly)")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130
    assert "Traceback" not in err and "Task was destroyed" not in err
    assert "slow: completed" not in out and "after: running" not in out
    *lines, resume = err.splitlines()
    assert lines == [
        "interrupted; the run was cancelled",
        "  completed: quick",
        "  cancelled: slow",
        "  not started: after",
    ]
    # the run was checkpointed: the last line says how to continue it
    assert re.fullmatch(r"continue it with: oma runs resume \S+", resume), resume


def test_ctrl_c_on_a_terminal_leaves_the_table_with_what_finished(
    slow_plan: str, terminals: list[Terminal]
) -> None:
    terminal = on_terminal(terminals, "tasks", slow_plan)
    terminal.read_until(
        lambda screen: "completed" in screen.row_of("quick") and "running" in screen.row_of("slow")
    )
    terminal.type(b"\x03")  # what a person types: the terminal sends SIGINT
    assert terminal.wait() == 130
    screen = terminal.screen
    assert "completed" in screen.row_of("quick")
    assert "cancelled" in screen.row_of("slow")
    assert "pending" in screen.row_of("after")
    text = screen.text()
    assert "interrupted; the run was cancelled" in text
    assert "Traceback" not in text


def test_cache_prices_price_a_tasks_cached_input_apart() -> None:
    from oma_core import Usage
    from oma_core.budgets import Price

    board = TaskBoard("t", prices=Price(10, 0, cache_read=1, cache_write=20))
    board.add("one", "a")
    usage = Usage(1_000_000, 0, cache_read_tokens=500_000, cache_write_tokens=100_000)
    board.apply(ProgressEvent("agent_complete", "a", "one", {"usage": usage}))
    # 400,000 plain input at $10, 500,000 read at $1, 100,000 written at $20 (per million)
    assert board.cost() == 4 + 0.5 + 2


def test_a_cache_price_without_a_price_is_a_usage_error(tmp_path: Path) -> None:
    plan = {"agents": [echo_agent("a")], "tasks": [task("one", "a")]}
    result = oma("tasks", write(tmp_path / "plan.json", plan), "--cache-price", "1", "2")
    assert result.returncode == 2
    assert "--cache-price needs --price IN OUT" in result.stderr
