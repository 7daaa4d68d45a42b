"""How the ``oma`` command ends: one ``error: ...`` line and a status, never a traceback.

- 2: called wrong or configured wrong (a click usage error, an ``oma_core`` ``UsageError``:
  bad input, an unknown provider, option or file, a missing key);
- 1: a run that started and failed (``RunResult.success`` False, a ``RunError``);
- 130: interrupted (Ctrl-C), quietly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, NoReturn, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

USAGE = 2
FAILED = 1
INTERRUPTED = 130


def fail(message: str, status: int = FAILED) -> NoReturn:
    """Print ``error: message`` (one line) on stderr and exit with ``status``."""
    click.echo(f"error: {' '.join(message.split())}", err=True)
    raise SystemExit(status)


def usage(message: str) -> NoReturn:
    """A usage or configuration mistake: ``error: message``, exit 2."""
    fail(message, USAGE)


def note(message: str) -> None:
    """A line on stderr that does not end the command."""
    click.echo(f"note: {message}", err=True)


@contextmanager
def reported() -> Iterator[None]:
    """Turn oma's errors into their exit: a ``UsageError`` exits 2, any other ``OmaError``
    1, Ctrl-C 130 without a word."""
    from ..errors import OmaError, UsageError

    try:
        yield
    except KeyboardInterrupt:
        raise SystemExit(INTERRUPTED) from None
    except UsageError as exc:
        message = usage_text(exc)
    except OmaError as exc:
        fail(str(exc))
    else:
        return
    usage(message)


def usage_text(error: BaseException) -> str:
    """A usage error's message, in the command line's words where oma's own are Python's."""
    from ..errors import MissingKeyError

    if isinstance(error, MissingKeyError):
        shown = error.display_name or error.provider
        where = " or ".join(error.variables)
        env = f"set {where} in the environment or " if where else ""
        return (
            f"{shown} needs an API key and has none: {env}store one with "
            f"`oma keys set {error.provider}` (--api-key KEY is the last resort)"
        )
    return str(error)


def command_guard(function: F) -> F:
    """Run a command inside ``reported()`` (and quiet on Ctrl-C at any point)."""

    @wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        with reported():
            return function(*args, **kwargs)

    return guarded  # type: ignore[return-value]


def stdin_is_piped() -> bool:
    """Whether stdin is a pipe or a file (not a terminal, and present)."""
    stream = sys.stdin
    if stream is None or stream.closed:
        return False
    try:
        return not stream.isatty()
    except (ValueError, OSError):
        return False
