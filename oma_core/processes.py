"""Child processes done safely on POSIX, for backend plugins: a clean environment, redacted
stderr, process-group shutdown.

Every child runs in its own session (its own process group), so stopping it means signalling
the whole group: the CLI and everything it forked. A grandchild that calls ``setsid`` itself
leaves the group and is out of reach. This module is an extension point for backend authors
(oma-process and oma-acp use it); ``import oma_core`` does not load it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import os
import re
import signal
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs

from .errors import BackendError
from .redaction import JWT_SHAPE, REDACTED, VENDOR_TOKEN_SHAPES

__all__ = [
    "ALLOWED_ENV",
    "CommandOptions",
    "number_option",
    "StderrTail",
    "argument_values",
    "blank",
    "child_environment",
    "close_pipes",
    "configured_values",
    "header_values",
    "url_values",
    "describe_exit",
    "prompt_fragments",
    "redact",
    "stop_process_group",
    "strip_terminal_controls",
    "wait_exit",
]

#: Variables a child inherits from the parent; everything else (API keys, tokens) stays behind.
ALLOWED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "TZ",
)

# The core's credential shapes, but any ``sk-`` key of 6+ characters (a stderr tail may show
# a short or cut one); ``Bearer`` keeps its word and assignments keep their quotes, below.
_SHAPES = (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), *VENDOR_TOKEN_SHAPES, JWT_SHAPE)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]+")
_CREDENTIAL_NAME = r"[A-Z0-9_\-]*(?:KEY|TOKEN(?!S)|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Z0-9_\-]*"
_ASSIGNMENT = re.compile(
    rf"(?i)\b({_CREDENTIAL_NAME}[\"']?)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&}}]+)"
)
# A credential-named option and its separate value on a command line: ``--api-key X``,
# ``--password 'a b'`` (``--token=X`` is an assignment above); a value starting with ``-`` is
# the next option, not a value.
_OPTION = re.compile(
    rf"(?i)(?<![\w\-])(--?{_CREDENTIAL_NAME})(\s+)(\"[^\"]*\"|'[^']*'|(?!-)[^\s,;&}}]+)"
)
_OPTION_NAME = re.compile(rf"(?i)--?{_CREDENTIAL_NAME}")
_NAMED_VALUE = re.compile(rf"(?i)(?:--?)?{_CREDENTIAL_NAME}=(.+)")

# Terminal control: strings (OSC, DCS, SOS, PM, APC: printable payload, then BEL or ST), CSI
# sequences, other escape sequences, and any C0 (but tab and newline), DEL or C1 character left.
_TERMINAL_CONTROL = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)

#: Prompt lines shorter than this are not redacted on their own (only as part of the prompt).
_FRAGMENT_MIN = 8
_FRAGMENT_MAX = 256


@attrs.frozen
class CommandOptions:
    """The options every command backend shares, checked: what to run, where, with what.

    ``env`` adds variables to the allow-listed environment (None: copy that one from the
    parent). ``from_mapping`` refuses unknown keys outside ``known`` with ``BackendError``.
    """

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str | None] = attrs.field(repr=False)
    cwd: str | None

    @classmethod
    def from_mapping(
        cls, options: Mapping[str, Any], *, backend: str, known: Iterable[str], what: str
    ) -> CommandOptions:
        """Check ``command``, ``args``, ``env`` and ``cwd``; ``what`` names the program."""
        unknown = sorted(set(options) - {"command", "args", "env", "cwd", *known})
        if unknown:
            raise _invalid(backend, f"unknown option(s) {', '.join(map(repr, unknown))}")
        command = options.get("command")
        if not isinstance(command, str) or not command:
            raise _invalid(backend, f'"command" must be a non-empty string ({what})')
        args = options.get("args", ())
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise _invalid(backend, '"args" must be a list of strings')
        env = options.get("env") or {}
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in env.items()
        ):
            raise _invalid(backend, '"env" must map variable names to strings (or None to inherit)')
        cwd = options.get("cwd")
        if cwd is not None and not isinstance(cwd, str | os.PathLike):
            raise _invalid(backend, '"cwd" must be a path')
        return cls(command, tuple(args), dict(env), None if cwd is None else os.fspath(cwd))


def number_option(
    options: Mapping[str, Any], name: str, default: Any, *, backend: str, allow_zero: bool = False
) -> Any:
    """``options[name]`` checked to be a positive number (or zero), else ``default``."""
    value = options.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(backend, f'"{name}" must be a number')
    if value < 0 or (value == 0 and not allow_zero):
        raise _invalid(backend, f'"{name}" must be positive')
    return value


def _invalid(backend: str, reason: str) -> BackendError:
    return BackendError(f"{backend} backend: {reason}", backend=backend)


def child_environment(extra: Mapping[str, str | None]) -> dict[str, str]:
    """The allow-listed part of ``os.environ`` plus exactly what ``extra`` names.

    A value of None copies that one variable from the parent (when it is set), so a config
    can pass ``ANTHROPIC_API_KEY`` through without writing the key down.
    """
    env = {name: os.environ[name] for name in ALLOWED_ENV if name in os.environ}
    for name, value in extra.items():
        if value is None:
            if name in os.environ:
                env[name] = os.environ[name]
        else:
            env[name] = value
    return env


def configured_values(extra: Mapping[str, str | None]) -> list[str]:
    """The values the variables named in ``extra`` get in the child: never shown in errors."""
    values = [os.environ.get(name) if value is None else value for name, value in extra.items()]
    return [value for value in values if value]


def argument_values(args: Iterable[str]) -> list[str]:
    """The credentials a command line gives its program: the value after a credential-named
    option (``--api-key X``, ``--password X``) or in one (``--token=X``, ``API_KEY=X``).

    Pass them to ``redact`` with ``configured_values``: a server may echo its arguments.
    """
    values: list[str] = []
    words = list(args)
    for index, word in enumerate(words):
        named = _NAMED_VALUE.fullmatch(word)
        if named is not None:
            values.append(named.group(1))
        elif _OPTION_NAME.fullmatch(word) and index + 1 < len(words):
            following = words[index + 1]
            if not following.startswith("-"):
                values.append(following)
    return [value for value in values if value]


def header_values(headers: Mapping[str, str]) -> list[str]:
    """Every value of ``headers`` (an HTTP server's ``Authorization``, ``X-Api-Key``...), and
    the credential inside a scheme's value: the token of ``Bearer T``, and the ``user:pass``
    and password that ``Basic B`` encodes. A server may echo any of them."""
    values: list[str] = []
    for value in headers.values():
        values.append(value)
        scheme, _, credential = value.strip().partition(" ")
        credential = credential.strip()
        if not credential:
            continue
        values.append(credential)
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(credential, validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            values.extend([pair, pair.partition(":")[2]])
    return [value for value in values if value]


def url_values(url: str) -> list[str]:
    """The credentials a URL carries: the password of its user info, and the values of
    credential-named query parameters (``?api_key=X``, ``?token=X``)."""
    try:
        parts = urlsplit(url)
        values = [parts.password or ""]
    except ValueError:
        return []
    query = parse_qsl(parts.query, keep_blank_values=False)
    values += [value for name, value in query if _OPTION_NAME.fullmatch(f"--{name}")]
    return [value for value in values if value]


def blank(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every literal value in ``secrets`` (of 4 characters or more; also as
    JSON writes it inside a string) replaced by ``[REDACTED]``, the longest first.

    Unlike ``redact`` it goes by value only: for what a program meant to return (a file with
    ``password = ...`` in it stays as it is), where only what oma gave it must not show.
    """
    forms = {s for s in secrets if len(s) >= 4}
    forms |= {json.dumps(s, ensure_ascii=False)[1:-1] for s in forms}
    for secret in sorted(forms, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def prompt_fragments(*texts: str | None) -> list[str]:
    """What of a prompt an error must not show: each text whole, and its longest lines.

    A child may echo its prompt to stderr, or an agent quote it in an error; pass the result
    to ``redact`` (or ``StderrTail.text``) with the configured values. Lines under 8
    characters stay (they say little and match too much); at most 256 lines are taken.
    """
    whole = [text for text in texts if text]
    lines = {
        line.strip()
        for text in whole
        for line in text.splitlines()
        if len(line.strip()) >= _FRAGMENT_MIN
    }
    return whole + sorted(lines, key=len, reverse=True)[:_FRAGMENT_MAX]


def strip_terminal_controls(text: str) -> str:
    """``text`` without terminal control: escape sequences (CSI, OSC, ...) and every C0, DEL
    and C1 character but newline and tab.

    Child output that becomes error text goes through this first: printed in a terminal, a
    sequence could clear the screen, retitle the window or fake a line of output.
    """
    return _TERMINAL_CONTROL.sub("", text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Blank out what looks like a credential, and every literal value in ``secrets``.

    Credentials go by shape (API keys, AWS key ids, GitHub and Slack tokens, JWTs, ``Bearer``)
    and by name: the value of any ``*KEY*``/``*TOKEN*``/``*SECRET*``/``*PASSWORD*`` assignment,
    quoted JSON keys included, and of such an option on a command line (``--api-key X``).
    Unlike the core's ``redaction`` module it keeps long base64-looking runs: a stderr tail is
    for reading.
    """
    text = blank(text, secrets)
    for shape in _SHAPES:
        text = shape.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _OPTION.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


class StderrTail:
    """Drains a stream, keeping only its last ``limit`` bytes (a chatty child never blocks)."""

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 0)
        self._buffer = bytearray()
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader) -> None:
        """A coroutine: read ``stream`` to its end, keeping the last bytes."""
        while chunk := await stream.read(65536):
            self._buffer += chunk
            if len(self._buffer) > self._limit:
                del self._buffer[: len(self._buffer) - self._limit]
                self.truncated = True

    def text(self, secrets: Iterable[str] = ()) -> str:
        """The tail, without terminal control, redacted. When cut, its first partial line goes
        too: a credential cut in half would no longer look like one."""
        text = self._buffer.decode("utf-8", errors="replace")
        if self.truncated:
            if "\n" in text:
                text = text[text.index("\n") + 1 :]
            text = "..." + text
        # Controls go first: one inside a credential would hide it from the redaction.
        return redact(strip_terminal_controls(text), secrets).strip()


def describe_exit(returncode: int) -> tuple[str, int | None, int | None]:
    """A phrase for how a process ended, with its exit code or signal number."""
    if returncode < 0:
        number = -returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}", None, number
    return f"exited with code {returncode}", returncode, None


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_adopted(pgid: int) -> None:
    """Reap members of the group that became our children (only when we are a subreaper)."""
    with contextlib.suppress(ChildProcessError, OSError):
        while True:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
            if pid == 0:
                return


async def stop_process_group(process: asyncio.subprocess.Process, grace: float) -> None:
    """A coroutine: stop ``process`` and its group: SIGTERM, ``grace`` seconds, then
    SIGKILL; reap the leader.

    Safe to call on a process that already exited (it then stops what the leader left behind
    in the group). Runs to completion even if the calling task is cancelled meanwhile.
    """
    pgid = process.pid  # start_new_session=True: the leader's pid is the group id
    try:
        if _signal_group(pgid, signal.SIGTERM):
            _signal_group(pgid, signal.SIGCONT)  # a stopped member cannot act on SIGTERM
            await _wait_group(process, pgid, grace)
    finally:
        # Whatever happened above (even a second cancellation), nothing of the group survives.
        if process.returncode is None or _signal_group(pgid, 0):
            _signal_group(pgid, signal.SIGKILL)
        cancelled = False
        for step in range(3):
            if step == 0:
                waiter = _wait_leader(process)
            elif step == 1:
                waiter = _wait_group(process, pgid, 1.0)
            else:
                waiter = _discard_stdout(process)
            try:
                await asyncio.shield(waiter)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError


def close_pipes(process: asyncio.subprocess.Process) -> None:
    """Close the pipes to a stopped process now, unread data and all.

    A grandchild that left the group (``setsid``) can hold stdout or stderr open forever; the
    transport would then stay open until garbage collection, after its event loop closed.
    """
    transport = getattr(process, "_transport", None)  # asyncio offers no public close
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


async def wait_exit(
    process: asyncio.subprocess.Process, within: float | None, interval: float = 0.02
) -> bool:
    """A coroutine: wait until ``process`` has exited; False if ``within`` seconds pass first.

    Unlike ``process.wait()`` (which on Python 3.11 also waits for every pipe to close), this
    returns as soon as the process itself is gone, even if a child it left holds stdout open.
    """
    loop = asyncio.get_running_loop()
    deadline = None if within is None else loop.time() + within
    while process.returncode is None:
        if deadline is not None and loop.time() >= deadline:
            return False
        await asyncio.sleep(interval)
    return True


async def _discard_stdout(process: asyncio.subprocess.Process) -> None:
    """Read stdout to its end, so its pipe (and the subprocess transport) close now."""
    if process.stdout is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(_read_to_eof(process.stdout), 0.5)


async def _read_to_eof(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def _wait_leader(process: asyncio.subprocess.Process) -> None:
    await wait_exit(process, 5.0)


async def _wait_group(process: asyncio.subprocess.Process, pgid: int, within: float) -> None:
    """Wait until the leader is reaped and the group is empty, or ``within`` seconds pass."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    await wait_exit(process, within)
    while process.returncode is not None:
        _reap_adopted(pgid)
        if not _signal_group(pgid, 0) or loop.time() >= deadline:
            return
        await asyncio.sleep(0.02)
