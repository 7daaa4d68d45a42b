"""``oma chat``: a conversation held one turn at a time, in a terminal or from piped lines.

Each turn is sent with the conversation so far, through ``Agent.stream`` as ``oma run`` sends
one (the chat keeps the history: the turns sent and the messages each run produced), streamed
to stdout and logged under one conversation id, so ``oma run -c`` continues it.

In a terminal the chat shows a banner and a ``>`` prompt; Ctrl-C during an answer cancels that
answer (the turn is not kept) and returns to the prompt; Ctrl-C at the prompt exits 130;
Ctrl-D, ``exit``, ``quit`` or ``!quit`` exit 0. Piped into, it reads one turn per line and
shows no decoration. Either way a turn that fails prints one ``error:`` line and the chat goes
on; a configuration mistake found when the first run starts (no key, no model) exits 2.

Lines starting with ``!`` are the chat's own: ``!multi [TOKEN]`` starts several lines ended by
``!end [TOKEN]``, ``!attach FILE`` adds a file (read as ``-a`` reads one) to the next turn,
``!help`` lists them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._agent import AgentOptions, make_agent
from ._exits import (
    command_guard,
    endpoint_of,
    explained,
    missing_model,
    progress_reporter,
    usage,
    usage_text,
)
from ._inputs import MediaOptions, continue_options, conversation_of, input_options, read_json
from ._templates import template_options

if TYPE_CHECKING:
    from .._results import RunResult
    from .._settings import RunSettings
    from ..agent import Agent
    from ..messages import ContentBlock
    from ._attach import Limits

#: The words that end the chat, as ``llm chat`` has them, and ``!quit``.
QUIT = ("exit", "quit", "!quit")

#: The longest piped line read as one turn (as ``oma run`` bounds piped text: 64 MiB).
MAX_LINE_BYTES = 64 * 1024 * 1024

_Line = TypeVar("_Line", str, bytes)

_HELP = (
    "Type !quit, exit or Ctrl-D to leave; !multi to type several lines, then !end; "
    "!attach FILE to attach a picture, video, document or audio clip to the next turn"
)


class _Lines:
    """Where turns come from: a terminal (with line editing and a prompt) or piped lines."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self.number = 0  # of the lines read, to name one that cannot be
        if interactive:
            with contextlib.suppress(ImportError):  # line editing and history for input()
                import readline  # noqa: F401

    def read(self, prompt: str) -> str | None:
        """The next line without its newline; None at the end of input. A line that is not
        text in stdin's encoding is skipped, saying so: the chat goes on with the next."""
        while True:
            try:
                return self._read(prompt)
            except UnicodeDecodeError as exc:
                self.number += 1
                click.echo(
                    f"error: line {self.number} of the input is not {exc.encoding} text (byte "
                    f"{exc.object[exc.start]:#04x} at {exc.start + 1}): skipped",
                    err=True,
                )

    def _read(self, prompt: str) -> str | None:
        if self.interactive:
            sys.stdout.flush()
            try:
                line = input(prompt)
            except EOFError:
                click.echo()
                return None
            # a terminal's bytes that are not text come as lone surrogates: decoded again,
            # they are the same error as a piped line's
            encoding = sys.stdin.encoding or "utf-8"
            line = line.encode(encoding, "surrogateescape").decode(encoding)
            self.number += 1
            return line
        if sys.stdin is None:  # started with stdin closed: no turns
            return None
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # a text stream only (already decoded)
            line = _bounded(sys.stdin.readline(MAX_LINE_BYTES + 1))
        else:  # bytes, decoded one line at a time: a bad line spoils no other
            line = _bounded(raw.readline(MAX_LINE_BYTES + 1)).decode(sys.stdin.encoding or "utf-8")
        self.number += 1
        return None if not line else line.removesuffix("\n").removesuffix("\r")


def _bounded(line: _Line) -> _Line:
    """A piped line, refused (exit 2) past ``MAX_LINE_BYTES``: ``cat /dev/zero | oma chat``
    stops there."""
    if len(line) > MAX_LINE_BYTES:
        usage(f"a piped line is longer than {MAX_LINE_BYTES} bytes")
    return line


class _Turns:
    """The user's turns, read line by line: ``!`` commands handled, attachments gathered."""

    def __init__(self, lines: _Lines, attach: Callable[[str], list[ContentBlock] | None]) -> None:
        self.lines = lines
        self.attach = attach
        self.pending: list[ContentBlock] = []

    def next(self) -> str | None:
        """The next turn's text (its attachments in ``pending``), or None to end the chat."""
        prompt = "> " if self.lines.interactive else ""
        while True:
            line = self.lines.read(prompt)
            if line is None:
                return None
            word = line.strip()
            if word in QUIT:
                return None
            if word == "!help":
                click.echo(_HELP, err=True)
            elif word == "!multi" or word.startswith("!multi "):
                text = self._multi(word.removeprefix("!multi").strip())
                if text is None:
                    return None
                if text.strip() or self.pending:
                    return text
            elif word == "!attach" or word.startswith("!attach "):
                self._attach(word.removeprefix("!attach").strip())
            elif word[:1] == "!" and word[1:2].isalpha():  # a mistyped command is not sent
                command = word.split()[0]
                click.echo(f"error: unknown chat command {command} (!help lists them)", err=True)
            elif word or self.pending:
                return line

    def _multi(self, token: str) -> str | None:
        end = f"!end {token}" if token else "!end"
        collected: list[str] = []
        prompt = ". " if self.lines.interactive else ""
        while True:
            line = self.lines.read(prompt)
            if line is None:
                return None
            if line.strip() == end:
                return "\n".join(collected)
            collected.append(line)

    def _attach(self, path: str) -> None:
        if not path:
            click.echo("error: !attach needs a FILE (or URL)", err=True)
            return
        blocks = self.attach(path)
        if blocks:
            self.pending.extend(blocks)
            kinds = ", ".join(_kind(block) for block in blocks)
            click.echo(f"attached {path} ({kinds}) to the next turn", err=True)


def _kind(block: ContentBlock) -> str:
    source = getattr(block, "source", None)
    return str(getattr(source, "media_type", getattr(block, "type", "?")))


def _reader(limits: Limits) -> Callable[[str], list[ContentBlock] | None]:
    """``!attach FILE``: the blocks ``-a FILE`` would give; a refused file prints its
    ``error:`` line and gives None (the chat goes on)."""
    from ._attach import Stdin, attachments

    def read(path: str) -> list[ContentBlock] | None:
        if path == "-":
            click.echo("error: !attach - : stdin holds the chat's turns", err=True)
            return None
        try:
            return attachments([path], (), (), (), Stdin(), limits)
        except SystemExit:  # the attachment reader said why on stderr; the chat goes on
            return None

    return read


def _turn_message(text: str, blocks: list[ContentBlock]) -> dict[str, Any]:
    from ..messages import LLMMessage, TextBlock
    from ..serialization import dump_messages

    content = ((TextBlock(text),) if text.strip() else ()) + tuple(blocks)
    (message,) = dump_messages([LLMMessage("user", content)])
    return message


async def _answer(agent: Agent, run_input: list[Any], settings: RunSettings) -> RunResult | None:
    """Stream one turn's answer to stdout; the run's result."""
    result = None
    last = "\n"
    async with agent.stream(run_input, settings=settings) as events:
        async for event in events:
            if event.type == "text" and event.data:
                click.echo(event.data, nl=False)
                sys.stdout.flush()
                last = event.data
            elif event.type == "done":
                result = event.data
    if not last.endswith("\n"):
        click.echo()
    return result


class _Chat:
    """One chat: the agent, its conversation id and history, and the event loop its turns
    share (the provider's connections belong to it)."""

    def __init__(self, agent: Agent, conversation_id: str, history: list[Any]) -> None:
        self.agent = agent
        self.conversation_id = conversation_id
        self.history = history
        self.runner = asyncio.Runner()
        self.endpoint = endpoint_of(agent)  # named in connection errors and retries

    def send(self, message: dict[str, Any]) -> None:
        """Send one turn; on success it and the answer join the history. Ctrl-C while it
        runs cancels it (``asyncio.Runner`` turns the first Ctrl-C into a cancellation)."""
        from .._settings import RunSettings
        from ..errors import OmaError

        run_input = [*self.history, message]
        settings = RunSettings(
            metadata={"conversation_id": self.conversation_id},
            progress=progress_reporter(self.endpoint),  # retries on stderr, as oma run
        )
        try:
            result = self.runner.run(_answer(self.agent, run_input, settings))
        except KeyboardInterrupt:
            click.echo("\n(cancelled)", err=True)
            return
        except OmaError as exc:  # refused before it was sent (its content, its provider)
            self._failed(exc)
            return
        if result is None:  # pragma: no cover - every stream ends with "done"
            click.echo("error: the run ended without a result", err=True)
        elif result.success:
            self.history = [*run_input, *result.messages]
        else:
            self._failed(result.status.error or result.status.code)

    def _failed(self, error: object) -> None:
        """One ``error:`` line for a failed turn; a configuration mistake, which every later
        turn would meet too (no key, no model, an unknown provider or option), exits 2."""
        from ..errors import MissingKeyError, MissingProviderError, PluginError, UsageError
        from ._keys import key_advice

        if isinstance(error, MissingKeyError | MissingProviderError | PluginError):
            usage(usage_text(error))
        no_model = missing_model(error, self.agent)
        if no_model is not None:
            usage(no_model)
        if isinstance(error, UsageError):
            text = usage_text(error)
        else:
            text = explained(error, self.endpoint) + key_advice(error, self.agent)
        click.echo(f"error: {' '.join(text.split())}", err=True)

    def close(self) -> None:
        try:
            self.runner.run(self.agent.aclose())
        finally:
            self.runner.close()


def _start(
    continue_last: bool,
    conversation_id: str | None,
    messages_file: str | None,
    agent_options: AgentOptions,
) -> tuple[str, list[Any], AgentOptions]:
    """The conversation the chat starts from: a logged one (``-c``, ``--cid``), a file's, or
    none; its id (a new one unless continued) and the options, logged ones filled in."""
    from .._settings import new_run_id
    from ._logs import continued_history

    if messages_file == "-":
        usage("oma chat reads its turns from stdin: --messages - cannot take it")
    if continue_last or conversation_id:
        if messages_file is not None:
            usage("give -c/--cid or --messages, not both")
        return continued_history(conversation_id, agent_options)
    history: list[Any] = []
    if messages_file is not None:
        loaded = conversation_of(read_json(messages_file))
        if not isinstance(loaded, list):
            usage(f"{messages_file} must hold a list of messages or an object with 'messages'")
        from ..errors import OmaError
        from ..validation import load_messages

        try:
            load_messages(loaded, allow_empty=True)
        except OmaError as exc:
            usage(f"{messages_file}: {usage_text(exc)}")
        history = loaded
    return new_run_id(), history, agent_options


def _banner(agent: Agent, conversation_id: str) -> None:
    """Who answers, the conversation id and how to leave, wrapped to the terminal's width
    (80 columns when it says none): no line runs past the edge."""
    import shutil
    import textwrap

    config = agent.config
    name = f"{config.provider}:{config.model}" if config.model else str(config.provider)
    width = max(20, shutil.get_terminal_size((80, 24)).columns)
    for paragraph in (f"Chatting with {name} (conversation {conversation_id})", _HELP):
        click.echo(textwrap.fill(paragraph, width=width, break_on_hyphens=False))


@click.command()
@input_options
@template_options
@continue_options
@click.option("--no-log", is_flag=True, help="Do not log the turns.")
@command_guard
def chat(
    prompt: str | None,
    media: MediaOptions,
    agent_options: AgentOptions,
    messages_file: str | None,
    continue_last: bool,
    conversation_id: str | None,
    no_log: bool,
) -> None:
    """Hold a conversation: each line is a turn, sent with the conversation so far.

    PROMPT, if given, is the first turn; -a files go with the first turn. Lines starting
    with ! are commands (!help). Every turn is logged under one conversation id, so
    `oma run -c` continues the chat.
    """
    from ..plugins import PluginHost
    from ._attach import limits_for
    from ._logs import log_plugin

    values = (*media.attach, *(v for v, _ in media.attach_types), *media.images, *media.videos)
    if "-" in values:
        usage("oma chat reads its turns from stdin: -a - cannot take it")
    cid, history, agent_options = _start(
        continue_last, conversation_id, messages_file, agent_options
    )
    limits = limits_for(agent_options)
    read = _reader(limits)
    interactive = sys.stdin is not None and not sys.stdin.closed and sys.stdin.isatty()
    turns = _Turns(_Lines(interactive), read)
    if values:  # the first turn's, refused (exit 2) before the chat starts
        from ._attach import Stdin, attachments

        turns.pending = attachments(
            media.attach, media.attach_types, media.images, media.videos, Stdin(), limits
        )
    host = PluginHost.default()
    plugin = None if no_log else log_plugin()
    if plugin is not None:
        host.register(plugin)
    try:
        session = _Chat(make_agent(agent_options, host), cid, history)
        try:
            if interactive:
                _banner(session.agent, cid)
            text = prompt
            while True:
                if text is None:
                    text = turns.next()
                    if text is None:
                        return
                session.send(_turn_message(text, turns.pending))
                turns.pending = []
                text = None
        finally:
            session.close()
    finally:
        if plugin is not None:
            host.unregister(plugin)
