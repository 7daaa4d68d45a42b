"""The run log as call middleware: each model call of a run updates the run's row in a
``RunLog`` (``oma_core._run_log``, whose ``plugin()`` builds it).

Not a default plugin: it is registered only by whoever wants a log (``RunLog.plugin()``; the
``oma`` command registers one unless ``oma logs off``). It is ``tryfirst``, outside the
budgets, so a call a budget refuses is logged too. What it writes is redacted: media as type,
size and SHA-256, never a payload or a key (the payloads go to the log's media store, when it
has one). The row is built and written in the log's writer thread (``RunLog.write_soon``),
awaited, so the event loop never waits on SQLite and the row is in before the call returns. A
log that cannot be written (a full disk, a lock held past the log's ``timeout``, a broken
file) never fails the run: it is reported as a ``warning`` progress event.

It sees the log through ``LogWriter``, the three members it uses, so it does not import
``RunLog``'s module: the log imports its middleware, not the other way round.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Mapping
from contextlib import aclosing
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from . import hookimpl

if TYPE_CHECKING:
    from ._calls import CallEvent, ModelCall, RunContext
    from ._media_store import MediaStore

__all__ = ["LogWriter", "RunLogger"]

_STATE = "oma.run_log"


class LogWriter(Protocol):
    """What ``RunLogger`` uses of a ``RunLog``: where it is, its media store, and a write
    done in its writer thread."""

    @property
    def path(self) -> Path: ...

    @property
    def media(self) -> MediaStore | None: ...

    async def write_soon(
        self, make: Callable[[], tuple[Mapping[str, Any], Iterable[bytes]]]
    ) -> list[str]: ...


class RunLogger:
    """Writes each run that passes through it to ``log``."""

    def __init__(self, log: LogWriter) -> None:
        self.log = log

    @hookimpl(wrapper=True, tryfirst=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._logged(events, call, run)

    async def _logged(
        self, events: AsyncGenerator[CallEvent, None], call: ModelCall, run: RunContext
    ) -> AsyncGenerator[CallEvent, None]:
        from .providers import ResponseComplete

        state: dict[str, Any] = run.state.setdefault(
            _STATE, {"input": 0, "output": 0, "seconds": 0.0, "calls": 0, "attempts": 0}
        )
        state["attempts"] += 1
        started = time.monotonic()
        response = None
        error: str | None = None
        try:
            async with aclosing(events) as inner:
                async for event in inner:
                    if isinstance(event, ResponseComplete):
                        response = event.response
                    yield event
        except BaseException as exc:  # logged, then raised on unchanged
            error = _error_text(exc)
            raise
        finally:
            state["seconds"] += time.monotonic() - started
            if response is not None:
                state["calls"] += 1
                state["input"] += response.usage.input_tokens
                state["output"] += response.usage.output_tokens
            await self._write(call, run, dict(state), response, error)

    async def _write(
        self,
        call: ModelCall,
        run: RunContext,
        state: dict[str, Any],
        response: Any,
        error: str | None,
    ) -> None:
        """Write the run's row in the log's writer thread (``RunLog.write_soon``): SQLite,
        and building the row (redaction hashes every media payload), stay off the loop."""
        written = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            problems = await self.log.write_soon(
                lambda: self._row(call, run, state, response, error, written)
            )
        except (OSError, sqlite3.Error) as exc:  # a log that cannot be written never fails a run
            problems = [
                f"the run log {self.log.path} was not written ({type(exc).__name__}: {exc})"
            ]
        if run.settings.progress is not None:
            for problem in problems:
                run.settings.progress("warning", {"message": problem})

    def _row(
        self,
        call: ModelCall,
        run: RunContext,
        state: dict[str, Any],
        response: Any,
        error: str | None,
        written: str,
    ) -> tuple[dict[str, Any], list[bytes]]:
        from ._media_store import payloads
        from .messages import TextBlock
        from .redaction import redact_json, redact_text
        from .serialization import dump_messages

        request = call.request
        answer = None
        output = None
        sent = dump_messages(request.messages)
        media = [*payloads(sent)] if self.log.media is not None else []
        if response is not None:
            (reply,) = dump_messages([response.message])
            media.extend(payloads(reply) if self.log.media is not None else ())
            answer = redact_json(_mark_urls(reply))
            text = "".join(b.text for b in response.message.content if isinstance(b, TextBlock))
            output = redact_text(text)
        conversation = run.metadata.get("conversation_id")
        row = {
            "run_id": run.run_id,
            "conversation_id": str(conversation) if conversation else run.run_id,
            "datetime_utc": written,
            "agent": run.agent,
            "provider": call.provider,
            "model": (response.model if response is not None else None) or request.model,
            "system": None if request.system_prompt is None else redact_text(request.system_prompt),
            "messages": redact_json(_mark_urls(sent)),
            "answer": answer,
            "output": output,
            "input_tokens": state["input"],
            "output_tokens": state["output"],
            "duration_ms": round(state["seconds"] * 1000),
            "calls": state["calls"],
            "attempts": state["attempts"],
            "error": error,
            **_settings(request, run),
        }
        return row, media


def _settings(request: Any, run: RunContext) -> dict[str, Any]:
    """The ``base_url`` and ``settings`` columns: where and how the run talked, so ``oma run
    -c`` talks there again. A base URL with user info or a query, or a provider option that
    looks like a secret (or is not JSON), is not kept: it is named under ``not_kept``."""
    import json

    from .redaction import REDACTED, redact_json, redact_url

    not_kept: list[str] = []
    settings: dict[str, Any] = {"model": request.model}
    for name in ("temperature", "max_tokens"):
        if getattr(request, name) is not None:
            settings[name] = getattr(request, name)
    if request.stop is not None:
        settings["stop"] = list(request.stop)
    options: dict[str, Any] = {}
    for name, value in run.config.provider_options.items():
        try:
            plain = json.loads(json.dumps({str(name): value}))
        except (TypeError, ValueError):
            plain = None
        if plain is not None and redact_json(plain) == plain:
            options[str(name)] = plain[str(name)]
        else:
            options[str(name)] = REDACTED
            not_kept.append(f"provider_options.{name}")
    if options:
        settings["provider_options"] = options
    base_url = run.config.base_url
    if base_url is not None and not _safe_url(base_url):
        not_kept.append("base_url")
        base_url = redact_url(base_url)
    if not_kept:
        settings["not_kept"] = not_kept
    return {"base_url": base_url, "settings": settings}


def _mark_urls(value: Any) -> Any:
    """``value`` with each URL media source that cannot be kept whole (user info, a query:
    a signed URL's signature) marked ``"redacted": true``, so ``oma run -c`` knows the logged
    URL is not the one sent."""
    if isinstance(value, dict):
        url = value.get("url")
        if value.get("type") == "url" and isinstance(url, str) and not _safe_url(url):
            return {**value, "redacted": True}
        return {key: _mark_urls(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mark_urls(item) for item in value]
    return value


def _safe_url(url: str) -> bool:
    """Whether ``url`` can be kept whole: no user info, query or fragment."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return not ("@" in parts.netloc or parts.query or parts.fragment)
    except ValueError:
        return False


def _error_text(exc: BaseException) -> str:
    import asyncio

    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | GeneratorExit):
        return "interrupted"
    from .redaction import redact_error

    redacted = redact_error(exc)
    return f"{type(exc).__name__}: {redacted}"
