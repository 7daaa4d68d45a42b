"""How the ``oma`` command ends: one ``error: ...`` line and a status, never a traceback.

- 2: called wrong or configured wrong (a click usage error, an ``oma_core`` ``UsageError``:
  bad input, an unknown provider, option or file, a missing key);
- 1: a run that started and failed (``RunResult.success`` False, a ``RunError``);
- 130: interrupted (Ctrl-C), quietly.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from ..agent import Agent

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
    1, Ctrl-C 130 without a word; input nested past Python's recursion limit (JSON read
    where no reader bounds its depth) is a usage error, never a traceback."""
    from ..errors import OmaError, UsageError

    try:
        yield
    except KeyboardInterrupt:
        raise SystemExit(INTERRUPTED) from None
    except RecursionError:  # JSON nested past Python's limit, wherever it was read
        message = (
            "a value given (an -o value, a file) nests lists or objects too deeply to read "
            "(hundreds of levels): flatten it"
        )
    except UsageError as exc:
        message = usage_text(exc)
    except OmaError as exc:
        fail(str(exc))
    else:
        return
    usage(message)


#: ``AgentConfig`` fields as the command line sets them.
_FLAGS = {
    "model": "-m MODEL",
    "provider": "-p PROVIDER",
    "base_url": "--base-url URL",
    "api_key": "--api-key KEY (or `oma keys set`)",
    "system_prompt": "-s SYSTEM",
    "provider_options": "-o NAME VALUE",
    "temperature": "-o temperature VALUE",
    "max_tokens": "-o max_tokens N",
    "stop": "-o stop VALUE",
}
#: "set AgentConfig.base_url (--base-url)", "pass AgentConfig.model": Python's advice.
_PYTHON_ADVICE = re.compile(r"\b(?:set|pass|give) AgentConfig\.(\w+)(?: \([^)]*\))?")


def in_command_words(message: str) -> str:
    """``message`` with advice to set an ``AgentConfig`` field said as the option that sets
    it (``set AgentConfig.base_url`` -> ``give --base-url URL``)."""

    def flag(match: re.Match[str]) -> str:
        option = _FLAGS.get(match.group(1))
        return match.group(0) if option is None else f"give {option}"

    return _PYTHON_ADVICE.sub(flag, message)


#: A declared option type, and a given value's Python type, as ``-o`` reads them: JSON.
_VALUE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "number": "a number",
    "str": "text",
    "list": "a JSON list",
    "tuple": "a JSON list",
    "dict": "a JSON object",
    "object": "a JSON object",
    "bool": "true or false",
    "NoneType": "null",
    "any": "any value",
}


def _value_words(type_names: str, given: bool = False) -> str:
    """``"str or list"`` as ``"text or a JSON list"``; a ``given`` float has a fraction (an
    integer is a number too)."""
    words = {**_VALUE_WORDS, "float": "a number with a fraction"} if given else _VALUE_WORDS
    return " or ".join(words.get(name, name) for name in type_names.split(" or "))


def usage_text(error: BaseException) -> str:
    """A usage error's message, in the command line's words where oma's own are Python's."""
    from ..errors import MissingKeyError, OptionTypeError, OutputTypeError

    if isinstance(error, OutputTypeError):  # the command's only output type is its schema
        return f"the schema given (--schema, --schema-multi) cannot be used: {error.reason}"
    if isinstance(error, OptionTypeError):
        wanted, got = _value_words(error.expected), _value_words(error.got, given=True)
        return (
            f"-o {error.option} for {error.name} must be {wanted}, not {got} (VALUE is read as "
            'JSON when it parses: 7, 0.5, true, ["a"], {"k": 1}; else it is text)'
        )

    if isinstance(error, MissingKeyError):
        shown = error.display_name or error.provider
        where = " or ".join(error.variables)
        env = f"set {where} in the environment or " if where else ""
        return (
            f"{shown} needs an API key and has none: {env}store one with "
            f"`{error.store_command}` (--api-key KEY is the last resort)"
        )
    from .._hints import takers_hint
    from ..plugins import PluginHost

    return in_command_words(str(error)) + takers_hint(
        error, lambda: PluginHost.default().provider_specs()
    )


def missing_model(error: object, agent: Agent) -> str | None:
    """The command's words for a failure that a missing ``-m`` explains, or None.

    A provider without a default model (``openai-compatible``, a local server's preset) fails
    its first call when no model is given, before anything is sent. Such a failure (a
    ``ProviderError`` with no HTTP status that retrying cannot fix, which speaks of the model)
    of an agent with no model and no default model is a configuration mistake: ``-m MODEL is
    needed for PROVIDER``, exit 2, instead of the provider's Python advice. (``ProviderSpec``
    has no flag saying a provider needs a model; with one, this would be checked before the
    run.)
    """
    from ..errors import ProviderError

    config = agent.config
    if config.model is not None or config.backend is not None:
        return None
    if not isinstance(config.provider, str) or not isinstance(error, ProviderError):
        return None
    if error.status_code is not None or error.retryable or "model" not in str(error).lower():
        return None
    spec = agent.plugins.provider_specs().get(config.provider)
    if spec is None or spec.default_model is not None:
        return None
    return (
        f"-m MODEL is needed for {config.provider} (it has no default model): "
        f"-p {config.provider} -m MODEL, or -m {config.provider}:MODEL"
    )


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


# -- what a run reports on stderr while it runs ---------------------------------------------


def endpoint_of(agent: Agent) -> str | None:
    """The host (and port) the agent's provider talks to, for connection errors: from
    ``--base-url`` or the provider's documented default; never user info, path or query."""
    from urllib.parse import urlsplit

    config = agent.config
    url = config.base_url
    if url is None and config.backend is None and isinstance(config.provider, str):
        spec = agent.plugins.provider_specs().get(config.provider)
        url = None if spec is None else spec.default_base_url
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host if port is None else f"{host}:{port}"


def explained(error: object, endpoint: str | None) -> str:
    """The error's text on one line, naming the host of a connection error."""
    from ..errors import ProviderError

    text = " ".join(str(error).split())
    if (
        endpoint
        and isinstance(error, ProviderError)
        and error.status_code is None
        and "connect" in text.lower()
        and endpoint not in text
    ):
        text += f" (connecting to {endpoint})"
    return text


def progress_reporter(endpoint: str | None) -> Callable[[str, dict[str, Any]], None]:
    """The ``RunSettings.progress`` observer of ``oma run`` and ``oma chat``: retries
    (``retrying: attempt N failed (why); waiting Ts``) and warnings on stderr, as they
    happen, so a slow answer is never silent."""

    def report(event_type: str, data: dict[str, Any]) -> None:
        if event_type == "retry":
            error = data.get("error")
            reason = "unknown" if error is None else explained(error, endpoint)
            click.echo(
                f"retrying: attempt {data.get('attempt')} failed ({reason}); "
                f"waiting {float(data.get('delay') or 0):.1f}s",
                err=True,
            )
        elif event_type == "warning":
            note(str(data.get("message")))

    return report
