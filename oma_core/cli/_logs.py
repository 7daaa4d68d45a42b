"""``oma logs``: the SQLite log of every ``oma run`` (``oma_core._run_log``), and ``-c``.

Logging is on unless ``oma logs off`` (a ``logs-off`` file beside the database). ``oma run
-c`` continues the last conversation (``--cid ID`` a chosen one): its logged messages and
answer are sent as history, with the provider, model, base URL, options and system prompt it
used unless given again. The database keeps media only as type, size and SHA-256; their bytes
are kept in the media store beside it (``media/``, unless ``--no-keep-media``) and sent again
from there, checked against the hash. What cannot be sent again (a media file removed or
changed, a URL whose query was not logged) becomes a short text placeholder naming it, and a
note on stderr says how many. ``oma logs rm`` and ``prune`` remove runs and the media no
run refers to any more.

``oma logs`` prints the runs as SQLite reads them (``RunLog.each``), so a log of any size is
listed in the memory of one run; a row that cannot be read back is marked in its place, the
others are listed, and the command ends with one ``error:`` line, exit 2.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

import attrs
import click

from ._exits import command_guard, fail, note, usage
from ._paths import logs_off_path, logs_path

if TYPE_CHECKING:
    from .._run_log import LoggedRun, MalformedRunError, RunLog
    from ._agent import AgentOptions


def logging_on() -> bool:
    return not logs_off_path().exists()


def run_log(keep_media: bool = True) -> RunLog:
    """The command's log: ``logs.db``, with its media store ``media/`` beside it."""
    from .._run_log import RunLog

    path = logs_path()
    return RunLog(path, media_dir=path.parent / "media" if keep_media else None)


def read_runs(
    limit: int | None = 3,
    search: str | None = None,
    conversation_id: str | None = None,
    model: str | None = None,
    since: datetime | None = None,
) -> list[LoggedRun]:
    """The logged runs (see ``RunLog.runs``); a broken database is one ``error:`` line."""
    log = run_log()
    try:
        return log.runs(
            limit, search=search, conversation_id=conversation_id, model=model, since=since
        )
    except (sqlite3.Error, OSError, ValueError) as exc:
        _unreadable(log, exc)


def _unreadable(log: RunLog, error: Exception) -> NoReturn:
    fail(
        f"cannot read the run log {log.path} ({_reason(error)}); move it away to start a new one", 2
    )


def _reason(error: Exception) -> str:
    """Why the log cannot be read or changed, in words rather than Python's class names: a
    malformed row says so itself, SQLite's errors are SQLite's (``SQLite: file is not a
    database``), the system's its own (``Permission denied``)."""
    if isinstance(error, sqlite3.Error):
        return f"SQLite: {error}"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def log_plugin(keep_media: bool = True) -> object | None:
    """The middleware that logs this command's run, or None when logging is off."""
    return run_log(keep_media).plugin() if logging_on() else None


def continued_history(
    conversation_id: str | None, options: AgentOptions
) -> tuple[str, list[dict[str, Any]], AgentOptions]:
    """The conversation to continue: its id, the history to send, and the options with the
    logged provider, model and system prompt filled in where not given."""
    found = read_runs(1, conversation_id=conversation_id)
    last = found[0] if found else None
    if last is None:
        if conversation_id:
            usage(f"no logged conversation {conversation_id} (see `oma logs`)")
        usage("no logged conversation to continue (see `oma logs`)")
    options = _logged_options(last, options)  # first: a refusal comes before any note
    history, missing, urls = _history_of(last, run_log())
    if last.answer is None:  # the last run failed: its unanswered turn is not sent again
        while history and history[-1].get("role") == "user":
            history.pop()
        note("the last run of the conversation failed; its prompt is not sent again")
    if missing:
        note(
            f"{_blocks(missing)} of the logged conversation {'is' if missing == 1 else 'are'} "
            "not in the media store (kept unless --no-keep-media; removed by `oma logs rm` or "
            "`prune`) or changed since: the model sees a placeholder"
        )
    if urls:
        note(
            f"{_blocks(urls)} of the logged conversation had a URL with a query or user info, "
            "which the log does not keep: the model sees a placeholder"
        )
    if options.system_prompt is None and last.system is not None:
        options = attrs.evolve(options, system_prompt=last.system)
    return last.conversation_id, history, options


def _logged_options(last: LoggedRun, options: AgentOptions) -> AgentOptions:
    """``options`` completed from the logged run: where and how the conversation talked.

    Without ``-p``/``-m``, the logged provider, model, base URL (unless ``--base-url``) and
    provider options (``-o`` replaces one by name) are used again; with either, none of them
    is: a base URL and provider options belong to a provider. The portable settings
    (temperature, max_tokens, stop) carry over either way unless given with ``-o``.
    """
    from ._agent import PORTABLE_OPTIONS

    settings = last.settings
    not_kept = settings.get("not_kept") or []
    given = {name for name, _ in options.options}
    carried: list[tuple[str, str]] = []
    for name in PORTABLE_OPTIONS:
        if name not in given and settings.get(name) is not None:
            carried.append((name, json.dumps(settings[name])))
    if options.provider is None and options.model is None:
        options = attrs.evolve(
            options, provider=last.provider, model=settings.get("model") or last.model
        )
        if options.base_url is None:
            if "base_url" in not_kept:
                usage(
                    f"the conversation talked to {last.base_url} with credentials or a query "
                    "the log does not keep: give --base-url again"
                )
            options = attrs.evolve(options, base_url=last.base_url)
        for name, value in (settings.get("provider_options") or {}).items():
            if name in given:
                continue
            if f"provider_options.{name}" in not_kept:
                note(
                    f"the provider option {name} of the conversation looked like a secret and "
                    f"was not logged: give it again with -o {name} VALUE"
                )
                continue
            carried.append((name, json.dumps(value)))
    if carried:
        options = attrs.evolve(options, options=(*carried, *options.options))
    return options


def _blocks(count: int) -> str:
    return f"{count} media block{'s' if count != 1 else ''}"


def _history_of(last: LoggedRun, log: RunLog) -> tuple[list[dict[str, Any]], int, int]:
    """The history to send: the logged messages and answer, each media block's payload read
    back from the media store (checked against its SHA-256), a URL sent again when it was
    logged whole; what cannot be sent again becomes a text placeholder naming it. Returns the
    history, and how many blocks were missing from the store and how many URLs were cut."""
    import base64

    messages = [*last.messages, *([last.answer] if last.answer else [])]
    missing = urls = 0

    def block(item: Any) -> Any:
        nonlocal missing, urls
        if not isinstance(item, dict):  # not a block: left for the run's validation to name
            return item
        source = item.get("source")
        if isinstance(source, dict) and source.get("type") == "url" and source.get("redacted"):
            urls += 1
            return {
                "type": "text",
                "text": f"[{item.get('type')} {source.get('media_type')} at "
                f"{source.get('url')}: sent earlier, its query not kept]",
            }
        if isinstance(source, dict) and "data" not in source and "url" not in source:
            sha256, size = source.get("sha256"), source.get("bytes")
            raw = log.media_of(sha256, size) if isinstance(sha256, str) else None
            if raw is not None and isinstance(size, int):
                data = base64.b64encode(raw).decode("ascii")
                media_type = source.get("media_type")
                return {
                    **item,
                    "source": {"type": "base64", "media_type": media_type, "data": data},
                }
            missing += 1
            return {
                "type": "text",
                "text": f"[{item.get('type')} {source.get('media_type')}, "
                f"{size} bytes, sha256 {sha256}: sent earlier, not kept]",
            }
        if item.get("type") == "tool_result" and isinstance(item.get("content"), list):
            return {**item, "content": [b for b in map(block, item["content"]) if b]}
        if item.get("type") == "reasoning":
            return None  # a past turn's reasoning is not sent back
        return item

    history = []
    for message in messages:
        content = [b for b in map(block, message.get("content", [])) if b]
        if content:
            history.append({**message, "content": content})
    return history, missing, urls


def _describe(run: LoggedRun) -> str:
    prompt = ""
    for message in reversed(run.messages):
        if message.get("role") == "user":
            texts = [
                b.get("text", "") for b in message.get("content", []) if b.get("type") == "text"
            ]
            media = [
                f"{b.get('type')} {b.get('source', {}).get('media_type')}"
                for b in message.get("content", [])
                if b.get("type") in ("image", "video", "document", "audio")
            ]
            prompt = " ".join([*texts, *(f"[{m}]" for m in media)])
            break
    lines = [
        f"## {run.datetime_utc}  conversation {run.conversation_id}",
        f"{run.provider}{':' + run.model if run.model else ''}  "
        f"{run.input_tokens} in, {run.output_tokens} out, {run.duration_ms} ms",
        f"> {prompt}",
    ]
    if run.output:
        lines.append(run.output)
    if run.error:
        lines.append(f"error: {run.error}")
    return "\n".join(lines)


_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str) -> datetime:
    """``--since``: an age (``30m``, ``2h``, ``7d``, ``1w``) or an ISO date or date and time
    (UTC unless it names a zone)."""
    from datetime import UTC, timedelta

    age = _AGE.fullmatch(text.strip())
    if age:
        try:
            return datetime.now(UTC) - timedelta(seconds=float(age[1]) * _SECONDS[age[2]])
        except OverflowError:  # older than any date: since the start
            return datetime.min.replace(tzinfo=UTC)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        usage(
            f"--since {text!r} is neither an age (30m, 2h, 7d, 1w) nor an ISO date or time "
            "(2026-05-01, 2026-05-01T14:30)"
        )
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # a zone's offset past year 1 or 9999: the edge of all dates
        edge = datetime.min if moment.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)


def _usage_table(runs: Rows) -> tuple[dict[str, Any], list[MalformedRunError]]:
    """Token usage of ``runs``, in all and per ``provider:model``; and the errors of the rows
    that cannot be read."""
    from .._run_log import MalformedRunError

    per: dict[str, dict[str, int]] = {}
    bad: list[MalformedRunError] = []
    for run in runs:
        if isinstance(run, MalformedRunError):
            bad.append(run)
            continue
        name = f"{run.provider}:{run.model}" if run.model else run.provider
        row = per.setdefault(name, {"runs": 0, "input_tokens": 0, "output_tokens": 0})
        row["runs"] += 1
        row["input_tokens"] += run.input_tokens
        row["output_tokens"] += run.output_tokens
    total = {
        key: sum(row[key] for row in per.values())
        for key in ("runs", "input_tokens", "output_tokens")
    }
    models = [{"model": name, **row} for name, row in sorted(per.items())]
    return {**total, "models": models}, bad


@click.group(invoke_without_command=True)
@click.option(
    "-n",
    "--count",
    default=None,
    type=click.IntRange(min=0),
    help="How many runs (0: all) [default: 3; with -u, all].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as a JSON list.")
@click.option("-q", "--query", default=None, help="Only runs whose prompt or answer has this.")
@click.option("--cid", "conversation_id", default=None, help="Only this conversation.")
@click.option(
    "-m", "--model", default=None, metavar="MODEL", help="Only runs of MODEL or PROVIDER:MODEL."
)
@click.option(
    "--since", default=None, metavar="WHEN", help="Only runs since WHEN (2h, 7d, 2026-05-01)."
)
@click.option(
    "-u", "--usage", "show_usage", is_flag=True, help="Print the token usage of the runs."
)
@click.pass_context
@command_guard
def logs(
    ctx: click.Context,
    count: int | None,
    as_json: bool,
    query: str | None,
    conversation_id: str | None,
    model: str | None,
    since: str | None,
    show_usage: bool,
) -> None:
    """Show the last logged runs; `oma logs off|on|path|status|rm|prune` manage the log."""
    if ctx.invoked_subcommand is not None:
        return
    after = None if since is None else parse_since(since)
    if count is None:
        count = 0 if show_usage else 3
    log = run_log()
    runs = log.each(
        count or None, search=query, conversation_id=conversation_id, model=model, since=after
    )
    show = _show_usage if show_usage else _show_json if as_json else _show_text
    try:
        bad = show(runs, as_json)
    except BrokenPipeError:  # the reader went away (`| head`): click ends quietly
        raise
    except (sqlite3.Error, OSError) as exc:
        _unreadable(log, exc)
    finally:
        runs.close()
    if bad:
        more = f", and {_counted(len(bad) - 1, 'other run')}" if len(bad) > 1 else ""
        fail(f"cannot read the run log {log.path} ({bad[0]}{more}; marked in the listing)", 2)


#: What ``oma logs`` lists: each run, or the error of a row that cannot be read back.
Rows = Iterable["LoggedRun | MalformedRunError"]


def _show_text(runs: Rows, _as_json: bool) -> list[MalformedRunError]:
    """Each run as ``_describe`` says it, a blank line between, as SQLite reads them; a row
    that cannot be read is one line in its place. Returns those rows' errors."""
    from .._run_log import MalformedRunError

    bad: list[MalformedRunError] = []
    for index, run in enumerate(runs):
        if index:
            click.echo("")
        if isinstance(run, MalformedRunError):
            bad.append(run)
            click.echo(f"## run {run.run_id}: cannot be read ({run.column} {run.reason})")
        else:
            click.echo(_describe(run))
    return bad


def _show_json(runs: Rows, _as_json: bool) -> list[MalformedRunError]:
    """The runs as one JSON list (``json.dumps(..., indent=2)``'s text), written as they are
    read; a row that cannot be read is ``{"run_id": ..., "unreadable": "why"}``."""
    import textwrap

    from .._run_log import MalformedRunError

    bad: list[MalformedRunError] = []
    opening = "[\n"
    for run in runs:
        if isinstance(run, MalformedRunError):
            bad.append(run)
            item: dict[str, Any] = {
                "run_id": run.run_id,
                "unreadable": f"{run.column} {run.reason}",
            }
        else:
            item = run.as_json()
        text = json.dumps(item, ensure_ascii=False, indent=2)
        click.echo(opening + textwrap.indent(text, "  "), nl=False)
        opening = ",\n"
    click.echo("[]" if opening == "[\n" else "\n]")
    return bad


def _show_usage(runs: Rows, as_json: bool) -> list[MalformedRunError]:
    """The token usage of the runs, in all and per ``provider:model`` (a row that cannot be
    read is not counted)."""
    table, bad = _usage_table(runs)
    if as_json:
        click.echo(json.dumps(table, indent=2))
        return bad
    for row in table["models"]:
        click.echo(
            f"{row['model']}  {_counted(row['runs'], 'run')}, "
            f"{row['input_tokens']} in, {row['output_tokens']} out"
        )
    click.echo(
        f"total  {_counted(table['runs'], 'run')}, "
        f"{table['input_tokens']} in, {table['output_tokens']} out"
    )
    return bad


@logs.command("path")
def logs_path_command() -> None:
    """Print where the log database is."""
    click.echo(str(logs_path()))


@logs.command("status")
def logs_status() -> None:
    """Say whether runs are logged, where, and how many are."""
    log = run_log()
    try:
        count = log.count()
    except (sqlite3.Error, OSError) as exc:
        _unreadable(log, exc)
    state = "on" if logging_on() else "off"
    click.echo(f"logging is {state}; {count} run{'s' if count != 1 else ''} in {logs_path()}")


@logs.command("rm")
@click.argument("conversation_id", metavar="ID")
@command_guard
def logs_rm(conversation_id: str) -> None:
    """Remove conversation ID's runs and the media no other run refers to."""
    runs, files = _changed(lambda log: log.remove(conversation_id))
    if not runs:
        usage(f"no logged conversation {conversation_id} (see `oma logs`)")
    click.echo(f"removed {_counted(runs, 'run')} and {_counted(files, 'media file')}")


@logs.command("prune")
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    default=None,
    metavar="DAYS",
    help="Remove the runs logged more than DAYS days ago.",
)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Remove all but the newest N runs.",
)
@command_guard
def logs_prune(days: float | None, keep: int | None) -> None:
    """Remove old runs, then the media no run refers to (with no option: only those media)."""
    from datetime import UTC, datetime, timedelta

    if days is not None and days != days:  # NaN: no number of days
        usage("--older-than DAYS takes a number of days >= 0, not nan")
    try:
        cutoff = None if days is None else datetime.now(UTC) - timedelta(days=days)
    except OverflowError:  # longer ago than any date: no run is that old
        cutoff = datetime.min.replace(tzinfo=UTC)
    runs, files = _changed(lambda log: log.prune(older_than=cutoff, keep=keep))
    click.echo(f"removed {_counted(runs, 'run')} and {_counted(files, 'media file')}")


def _counted(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


def _changed(change: Callable[[RunLog], tuple[int, int]]) -> tuple[int, int]:
    """``change`` applied to the log; a broken database is one ``error:`` line."""
    log = run_log()
    try:
        return change(log)
    except (sqlite3.Error, OSError) as exc:
        reason = _reason(exc)
    fail(f"cannot change the run log {log.path} ({reason})", 2)


@logs.command("off")
def logs_off() -> None:
    """Stop logging runs (the log is kept)."""
    marker = logs_off_path()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    click.echo("logging is off", err=True)


@logs.command("on")
def logs_on() -> None:
    """Log runs again."""
    logs_off_path().unlink(missing_ok=True)
    click.echo("logging is on", err=True)
