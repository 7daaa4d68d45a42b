"""``oma chat``: a conversation in a real terminal (a pty) and from piped lines.

Terminal tests wait for what the chat prints (its ``>`` prompt, an answer's words), each wait
bounded by a generous deadline: nothing depends on the machine's speed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from oma_core import RunLog

ROOT = Path(__file__).resolve().parent.parent
PNG = ROOT / "examples" / "cat.png"
#: The longest any one wait may take; a wait ends as soon as what it waits for arrives.
DEADLINE = 60.0
PROMPT = b"> "


def environment(home: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("OMA_")},
        "OMA_HOME": str(home),
        "OMA_LOAD_PLUGINS": "",
        "TERM": "dumb",  # readline without escape sequences
    }


class Terminal:
    """A command run in a pseudo-terminal: the pty is its controlling terminal, so Ctrl-C
    and Ctrl-D typed into it act as they do for a user."""

    def __init__(self, args: list[str], home: Path, **extra: str) -> None:
        env = {**environment(home), **extra}
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the command
            try:
                os.chdir(ROOT)
                # as a terminal starts it: a runner started in the background ignores SIGINT,
                # and Python keeps an ignored SIGINT ignored (Ctrl-C would then do nothing)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.execve(sys.executable, [sys.executable, *args], env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.output = b""
        self.seen = 0  # how much of the output earlier waits consumed
        self.status: int | None = None

    def _read(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False once the terminal is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError as exc:  # EIO: the command ended and the pty closed
            if exc.errno != errno.EIO:
                raise
            return False
        if not data:
            return False
        self.output += data.replace(b"\r\n", b"\n")
        return True

    def expect(self, marker: bytes) -> str:
        """The output up to and including ``marker``, after what earlier waits consumed."""
        deadline = time.monotonic() + DEADLINE
        while marker not in self.output[self.seen :]:
            left = deadline - time.monotonic()
            closed = left <= 0 or not self._read(min(left, 1.0))
            if closed and marker not in self.output[self.seen :]:
                raise AssertionError(f"no {marker!r} in {self.output[self.seen :]!r}")
        end = self.output.index(marker, self.seen) + len(marker)
        chunk, self.seen = self.output[self.seen : end], end
        return chunk.decode("utf-8", "replace")

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait_for_input(self) -> None:
        """Until the command blocks waiting for the terminal: in read(2) on fd 0, or in
        select/poll (readline's wait). A Ctrl-C typed before that point may land between
        Python's signal check and the wait, and be seen only at the next key."""
        aarch64 = os.uname().machine == "aarch64"
        read, waits = ("63", {"72", "73"}) if aarch64 else ("0", {"7", "23", "270", "271"})
        syscall = Path(f"/proc/{self.pid}/syscall")
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                number, first = syscall.read_text().split()[:2]
            except (OSError, ValueError):
                number = first = ""
            if (number == read and first == "0x0") or number in waits:
                return
            time.sleep(0.01)
        raise AssertionError("the command never waited for the terminal")

    def say(self, line: str) -> str:
        """Type a line at the prompt; what it printed up to the next prompt."""
        self.type(line + "\r")
        return self.expect(PROMPT)

    def wait(self) -> int:
        """The exit status, once the command ended."""
        deadline = time.monotonic() + DEADLINE
        while self.status is None:
            self._read(0.2)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
            elif time.monotonic() > deadline:
                raise AssertionError(f"still running; output: {self.output!r}")
        return self.status

    def close(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -9
        os.close(self.fd)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


#: Starts a command (python's arguments) in a terminal of its own.
Start = Callable[..., Terminal]


@pytest.fixture
def terminals(home: Path) -> Iterator[Start]:
    opened: list[Terminal] = []

    def start(*args: str, **env: str) -> Terminal:
        terminal = Terminal(list(args), home, **env)
        opened.append(terminal)
        return terminal

    yield start
    for terminal in opened:
        terminal.close()


def chat_in_terminal(terminals: Start, *args: str) -> Terminal:
    terminal = terminals("-m", "oma_core.cli", "chat", *args)
    banner = terminal.expect(PROMPT)
    assert "Chatting with echo" in banner
    return terminal


# -- in a terminal ------------------------------------------------------------------------------


def test_the_second_turn_is_sent_with_the_first_and_its_answer(terminals: Start) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    first = terminal.say("first question")
    assert 'user: text "first question"' in first
    second = terminal.say("second question")
    # echo describes what it received: the first turn, its answer, then this turn
    assert (
        'user: text "first question"\n'
        'assistant: text "user: text \\"first question\\""\n'
        'user: text "second question"\n'
    ) in second
    terminal.type("\x04")
    assert terminal.wait() == 0


def test_the_turns_of_a_chat_are_logged_under_one_conversation_id(
    terminals: Start,
    home: Path,
) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    terminal.say("one")
    terminal.say("two")
    terminal.type("exit\r")
    assert terminal.wait() == 0
    runs = RunLog(home / "logs.db").runs(None)
    assert len(runs) == 2
    assert len({run.conversation_id for run in runs}) == 1
    assert [m["content"][0]["text"] for m in runs[-1].messages if m["role"] == "user"] == [
        "one",
        "two",
    ]


def test_oma_run_c_continues_the_chat(terminals: Start, home: Path) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    terminal.say("in the chat")
    terminal.type("!quit\r")
    assert terminal.wait() == 0
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "run", "-c", "after the chat"],
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('user: text "in the chat"\nassistant: ')
    assert done.stdout.endswith('user: text "after the chat"\n')


def test_attach_adds_a_png_to_the_next_turn(terminals: Start) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    said = terminal.say(f"!attach {PNG}")
    assert "attached" in said and "image/png" in said
    answer = terminal.say("what is it?")
    size = PNG.stat().st_size
    assert f'user: text "what is it?"; image image/png base64 {size} bytes' in answer
    again = terminal.say("and now?")  # the attachment went with one turn only
    assert 'user: text "and now?"\n' in again
    terminal.type("\x04")
    assert terminal.wait() == 0


def test_an_attachment_that_cannot_be_read_is_one_line_and_the_chat_goes_on(
    terminals: Start,
) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    said = terminal.say("!attach no-such-file.png")
    assert "error:" in said and "no-such-file.png" in said
    assert 'user: text "still here"' in terminal.say("still here")
    terminal.type("\x04")
    assert terminal.wait() == 0


def test_multi_sends_several_lines_as_one_turn(terminals: Start) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    terminal.type("!multi\r")
    for line in ("line one", "line two"):
        terminal.expect(b". ")
        terminal.type(line + "\r")
    terminal.expect(b". ")
    answer = terminal.say("!end")
    assert 'user: text "line one\\nline two"' in answer
    terminal.type("\x04")
    assert terminal.wait() == 0


def test_ctrl_d_at_the_prompt_exits_0(terminals: Start) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    terminal.type("\x04")
    assert terminal.wait() == 0


def test_ctrl_c_at_the_prompt_exits_130(terminals: Start) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    terminal.wait_for_input()
    terminal.type("\x03")
    assert terminal.wait() == 130
    assert "Traceback" not in terminal.output.decode()


#: Providers registered in the command's process before it runs: "slow" starts its first
#: answer and then hangs, "flaky" fails its first call, "retrying" fails its first call with
#: a 503 worth retrying at once, "textonly" takes text only; their answers say how many
#: messages they were sent.
PROVIDERS = """
import asyncio, sys
from oma_core import Capabilities, LLMMessage, ProviderError, ProviderSpec, TextBlock, hookimpl
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderResponse, ResponseComplete, TextDelta

class Slow:
    name = display_name = "slow"
    calls = 0

    async def stream(self, request):
        type(self).calls += 1
        if type(self).calls == 1:
            if self.name == "flaky":
                raise ProviderError("the service is down", status_code=400)
            if self.name == "retrying":
                raise ProviderError("HTTP 503: overloaded", status_code=503, retry_after=0)
            yield TextDelta("thinking...")
            await asyncio.sleep(600)
        text = f"answered {len(request.messages)} message(s)"
        yield TextDelta(text)
        yield ResponseComplete(ProviderResponse(LLMMessage("assistant", (TextBlock(text),))))

    async def complete(self, request):
        raise NotImplementedError

    async def aclose(self):
        pass

class Flaky(Slow):
    name = display_name = "flaky"
    calls = 0

class Retrying(Slow):
    name = display_name = "retrying"
    calls = 0

class TextOnly(Slow):
    name = display_name = "textonly"
    calls = 1  # answers at once

class Plugin:
    @hookimpl
    def oma_register_providers(self):
        return [
            ProviderSpec(cls.name, cls.name, lambda settings, cls=cls: cls(),
                         Capabilities.text_only() if cls is TextOnly
                         else Capabilities.everything(), default_model="m1")
            for cls in (Slow, Flaky, Retrying, TextOnly)
        ]

PluginHost.default().register(Plugin(), name="test-providers")
from oma_core.cli import main
main(sys.argv[1:])
"""


def test_ctrl_c_during_an_answer_cancels_it_and_the_chat_goes_on(terminals: Start) -> None:
    terminal = terminals("-c", PROVIDERS, "chat", "-p", "slow")
    terminal.expect(PROMPT)
    terminal.type("never answered\r")
    terminal.expect(b"thinking...")
    terminal.type("\x03")
    assert "(cancelled)" in terminal.expect(PROMPT)
    # the cancelled turn is not kept: the next one is sent alone
    assert "answered 1 message(s)" in terminal.say("answered")
    terminal.type("\x04")
    assert terminal.wait() == 0


# -- piped -------------------------------------------------------------------------------------


def chat_piped(home: Path, lines: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "chat", *args],
        input=lines,
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )


def test_piped_lines_are_turns_without_prompt_or_banner(home: Path) -> None:
    done = chat_piped(home, "one\ntwo\n", "-p", "scripted", "-o", "responses", '["1", "2"]')
    assert (done.returncode, done.stdout, done.stderr) == (0, "1\n2\n", "")


def test_a_failed_turn_is_one_line_and_the_chat_goes_on(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROVIDERS, "chat", "-p", "flaky"],
        input="a\nb\n",
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr == "error: the service is down\n"
    # the failed turn is not kept: the next one is sent alone
    assert done.stdout == "answered 1 message(s)\n"


def test_a_retried_turn_says_so_on_stderr_as_oma_run_does(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROVIDERS, "chat", "-p", "retrying"],
        input="a\n",
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "answered 1 message(s)\n")
    assert done.stderr == "retrying: attempt 1 failed (HTTP 503: overloaded); waiting 0.0s\n"


def test_a_prompt_argument_and_a_first_attachment_open_the_chat(home: Path) -> None:
    done = chat_piped(home, "", "-p", "echo", "what is it?", "-a", str(PNG))
    size = PNG.stat().st_size
    assert done.returncode == 0, done.stderr
    assert done.stdout == f'user: text "what is it?"; image image/png base64 {size} bytes\n'


def test_stdin_cannot_be_attached_in_a_chat(home: Path) -> None:
    done = chat_piped(home, "", "-p", "echo", "-a", "-")
    assert done.returncode == 2
    assert done.stderr == "error: oma chat reads its turns from stdin: -a - cannot take it\n"


def test_chat_c_continues_the_last_logged_conversation(home: Path) -> None:
    before = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "run", "-p", "echo", "before the chat"],
        capture_output=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )
    assert before.returncode == 0
    done = chat_piped(home, "in the chat\n", "-c")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('user: text "before the chat"\nassistant: ')
    assert done.stdout.endswith('user: text "in the chat"\n')
    conversations = {run.conversation_id for run in RunLog(home / "logs.db").runs(None)}
    assert len(conversations) == 1


def test_a_chat_can_start_from_a_conversation_file(home: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.json"
    history.write_text(
        json.dumps(
            [
                {"role": "user", "content": [{"type": "text", "text": "earlier"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
            ]
        )
    )
    done = chat_piped(home, "now\n", "-p", "echo", "--messages", str(history))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ('user: text "earlier"\nassistant: text "noted"\nuser: text "now"\n')


def test_an_unknown_chat_command_is_one_line_and_not_sent(home: Path) -> None:
    done = chat_piped(home, "!atach x.png\nhello\n", "-p", "echo")
    assert done.returncode == 0
    assert done.stderr == "error: unknown chat command !atach (!help lists them)\n"
    assert done.stdout == 'user: text "hello"\n'


def test_exit_ends_a_piped_chat_before_the_lines_after_it(home: Path) -> None:
    done = chat_piped(home, "one\nexit\ntwo\n", "-p", "echo")
    assert (done.returncode, done.stdout) == (0, 'user: text "one"\n')


def test_a_turn_the_provider_cannot_take_is_one_line_and_the_chat_goes_on(home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROVIDERS, "chat", "-p", "textonly"],
        input=f"!attach {PNG}\nwhat is it?\nhello\n",
        capture_output=True,
        text=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "image" in errors[0]
    assert done.stdout == "answered 1 message(s)\n"


def test_an_invalid_conversation_file_is_refused_before_the_chat(
    home: Path, tmp_path: Path
) -> None:
    history = tmp_path / "history.json"
    history.write_text('[{"role": "user", "content": "not blocks"}]')
    done = chat_piped(home, "hello\n", "-p", "echo", "--messages", str(history))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"error: {history}: messages[0].content must be a list")


def test_multi_with_a_token_keeps_an_end_line_of_the_text(home: Path) -> None:
    done = chat_piped(home, "!multi abc\nfirst\n!end\n!end abc\n", "-p", "echo")
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'user: text "first\\n!end"\n'


def test_an_endless_piped_line_is_refused_not_read_whole(home: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "oma_core.cli", "chat", "-p", "echo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(home),
        cwd=ROOT,
    ) as process:
        assert process.stdin is not None and process.stdout and process.stderr
        chunk = b"x" * (1 << 20)
        with contextlib.suppress(BrokenPipeError):  # it stops reading at the bound
            for _ in range(80):  # 80 MiB without a newline, past the 64 MiB bound
                process.stdin.write(chunk)
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        process.wait(timeout=DEADLINE)
        out, err = process.stdout.read(), process.stderr.read()
    assert process.returncode == 2
    assert out == b""
    assert err == b"error: a piped line is longer than 67108864 bytes\n"


def test_chat_cid_continues_a_chosen_conversation(home: Path) -> None:
    for prompt in ("chosen", "latest"):
        run = subprocess.run(
            [sys.executable, "-m", "oma_core.cli", "run", "-p", "echo", prompt],
            capture_output=True,
            env=environment(home),
            cwd=ROOT,
            timeout=DEADLINE,
            check=False,
        )
        assert run.returncode == 0
    chosen = RunLog(home / "logs.db").runs(None)[0].conversation_id
    done = chat_piped(home, "more\n", "--cid", chosen)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('user: text "chosen"\n')
    assert "latest" not in done.stdout
    assert RunLog(home / "logs.db").runs(1)[0].conversation_id == chosen


# -- what no answer may do: a line that is not text, a cut answer, a banner too wide ----------


def test_a_piped_line_that_is_not_utf8_is_skipped_saying_why_and_the_chat_goes_on(
    home: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "chat", "-p", "echo"],
        input=b"one\n\xff\xfe bad\nthree\n",
        capture_output=True,
        env=environment(home),
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stderr == b"error: line 2 of the input is not utf-8 text (byte 0xff at 1): skipped\n"
    )
    turns = [m["content"][0]["text"] for m in RunLog(home / "logs.db").runs(1)[0].messages]
    assert turns[0::2] == ["one", "three"]


def test_ctrl_c_during_a_streamed_run_ends_the_partial_line_then_exits_130(
    terminals: Start,
) -> None:
    terminal = terminals("-c", PROVIDERS, "run", "-p", "slow", "hi")
    terminal.expect(b"thinking...")
    terminal.type("\x03")
    assert terminal.wait() == 130
    # the terminal echoes the Ctrl-C as ^C; the command's newline ends that line
    assert terminal.output.removesuffix(b"\n").removesuffix(b"^C") == b"thinking..."
    assert terminal.output.endswith(b"\n"), terminal.output


def test_the_banner_fits_80_columns(terminals: Start) -> None:
    terminal = terminals("-m", "oma_core.cli", "chat", "-p", "echo", COLUMNS="80")
    banner = terminal.expect(PROMPT).splitlines()[:-1]
    assert banner[0].startswith("Chatting with echo")
    assert "!attach FILE" in " ".join(banner)
    assert max(len(line) for line in banner) <= 80, banner
    terminal.type("\x04")
    assert terminal.wait() == 0


def test_a_typed_line_that_is_not_utf8_is_skipped_saying_why(terminals: Start) -> None:
    terminal = chat_in_terminal(terminals, "-p", "echo")
    os.write(terminal.fd, b"\xff bad\r")
    assert "error: line 1 of the input is not utf-8 text" in terminal.expect(b"skipped")
    terminal.expect(PROMPT)
    assert 'user: text "still here"' in terminal.say("still here")
    terminal.type("\x04")
    assert terminal.wait() == 0
