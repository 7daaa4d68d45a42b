"""``oma run``, ``oma validate`` and ``oma render``: one conversation in, an answer, a check
or a request body out."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import click

from ._agent import AgentOptions, make_agent
from ._exits import (
    command_guard,
    endpoint_of,
    explained,
    fail,
    missing_model,
    note,
    progress_reporter,
    usage,
    usage_text,
)
from ._inputs import (
    MediaOptions,
    build_input,
    check_json_file,
    continue_options,
    conversation_of,
    input_options,
    read_json,
    shorten,
)
from ._live import usage_json
from ._mcp import mcp_options, with_mcp
from ._templates import template_options

if TYPE_CHECKING:
    from .._results import RunResult
    from .._settings import ProgressEmitter, RunSettings
    from ..agent import Agent
    from ..plugins import PluginHost
    from ..providers import ProviderRequest


def _result_json(result: RunResult, conversation_id: str | None) -> dict[str, Any]:
    error = result.status.error
    return {
        "success": result.success,
        "output": result.output,
        "usage": usage_json(result.usage),
        "status": {"code": result.status.code, "error": None if error is None else str(error)},
        "conversation_id": conversation_id,
    }


def _plain(structured: Any) -> Any:
    """``--schema`` output as JSON data (a JSON Schema's output already is)."""
    from .._output import output_json

    return None if structured is None else json.loads(output_json(structured))


async def _execute(
    agent: Agent, run_input: str | list[Any], settings: RunSettings, *, stream: bool
) -> RunResult | None:
    """Run (or stream) once, then close the provider the agent created."""
    try:
        if stream:
            return await _stream(agent, run_input, settings)
        return await agent.run(run_input, settings=settings)
    finally:
        await agent.aclose()


async def _stream(
    agent: Agent, run_input: str | list[Any], settings: RunSettings
) -> RunResult | None:
    events = agent.stream(run_input, settings=settings)
    result = None
    printed = False
    try:
        async for event in events:
            if event.type == "text":
                click.echo(event.data, nl=False)
                sys.stdout.flush()
                printed = True
            elif event.type == "done":
                result = event.data
    finally:  # ended, or interrupted (Ctrl-C) mid-answer: the shell's prompt on a line of its own
        if printed:
            click.echo()
    return result


@click.command()
@input_options
@template_options
@continue_options
@click.option("--no-log", is_flag=True, help="Do not log this run.")
@click.option(
    "--no-keep-media",
    is_flag=True,
    help="Log this run without keeping its media (-c will not resend them).",
)
@click.option("--no-stream", is_flag=True, help="Wait for the whole answer (Agent.run).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as a JSON object.")
@click.option(
    "--schema",
    default=None,
    metavar="SCHEMA",
    help="Answer as JSON matching SCHEMA: a JSON Schema file, inline JSON, or fields such as "
    "'name, age int, bio: a short biography'.",
)
@click.option(
    "--schema-multi",
    default=None,
    metavar="SCHEMA",
    help='As --schema, for several: answer {"items": [...]} of objects matching SCHEMA.',
)
@click.option(
    "--fallback",
    "fallbacks",
    multiple=True,
    metavar="MODEL",
    help="PROVIDER:MODEL to answer when -m's model fails after its retries (repeatable, tried "
    "in order; never after an error the request caused).",
)
@click.option(
    "--backend",
    "backend_kind",
    default=None,
    metavar="KIND",
    help="Run an external agent backend (process, acp, ...) instead of a provider.",
)
@click.option(
    "--command", "backend_command", default=None, metavar="CMD", help="The backend's command."
)
@click.option(
    "--arg",
    "backend_args",
    multiple=True,
    metavar="ARG",
    help="An argument for the backend's command (repeatable).",
)
@mcp_options
@command_guard
def run(
    prompt: str | None,
    media: MediaOptions,
    agent_options: AgentOptions,
    messages_file: str | None,
    continue_last: bool,
    conversation_id: str | None,
    no_log: bool,
    no_keep_media: bool,
    no_stream: bool,
    as_json: bool,
    schema: str | None,
    schema_multi: str | None,
    fallbacks: tuple[str, ...],
    backend_kind: str | None,
    backend_command: str | None,
    backend_args: tuple[str, ...],
    mcp: tuple[str, ...],
    mcp_http: tuple[str, ...],
    mcp_prefix: tuple[str, ...],
) -> None:
    """Send PROMPT (and any media or conversation) to a provider and print the answer.

    Piped text on stdin is appended to PROMPT. Every run is logged (see `oma logs`).
    """
    from .._settings import RunSettings, new_run_id
    from ..plugins import PluginHost
    from ._logs import continued_history, log_plugin

    backend: dict[str, Any] | None = None
    if backend_kind is not None:
        backend = {"kind": backend_kind}
        if backend_command is not None:
            backend["command"] = backend_command
        if backend_args:
            backend["args"] = list(backend_args)
    elif backend_command is not None or backend_args:
        usage("--command and --arg need --backend")
    if fallbacks and backend_kind is not None:
        usage("--fallback names models: it cannot be used with --backend")
    output_type = _output_schema(schema, schema_multi)
    history: list[Any] = []
    if continue_last or conversation_id:
        conversation_id, history, agent_options = continued_history(conversation_id, agent_options)
    run_input = build_input(prompt, media, messages_file, agent_options)
    if history:  # the logged conversation, then this turn
        if isinstance(run_input, str):
            run_input = [{"role": "user", "content": [{"type": "text", "text": run_input}]}]
        run_input = [*history, *run_input]
    host = PluginHost.default()
    plugin = None if no_log else log_plugin(keep_media=not no_keep_media)
    conversation_id = conversation_id or new_run_id()
    if plugin is not None:
        host.register(plugin)
    try:
        agent = with_mcp(make_agent(agent_options, host, backend), mcp, mcp_http, mcp_prefix)
        agent = _with_fallbacks(agent, fallbacks, host)
        endpoint = endpoint_of(agent)
        settings = RunSettings(
            metadata={"conversation_id": conversation_id},
            progress=_fallbacks_shown(progress_reporter(endpoint)),
            output_type=output_type,
        )
        whole = no_stream or as_json or output_type is not None  # JSON is printed whole
        result = asyncio.run(_execute(agent, run_input, settings, stream=not whole))
    finally:
        if plugin is not None:
            host.unregister(plugin)
    if result is None:  # pragma: no cover - every stream ends with "done"
        fail("the run ended without a result")
    if as_json:
        logged = conversation_id if plugin is not None else None
        shown = _result_json(result, logged)
        if output_type is not None:  # --schema: the validated output too (null if none)
            shown["structured"] = _plain(result.structured)
        click.echo(json.dumps(shown, ensure_ascii=False, indent=2))
    elif output_type is not None and result.success:
        click.echo(json.dumps(_plain(result.structured), ensure_ascii=False, indent=2))
    elif no_stream and result.success:
        click.echo(result.output)
    if not result.success:
        error = result.status.error
        from ..errors import UsageError
        from ._keys import key_advice
        from ._mcp import server_failed

        # a configuration mistake found at run start (an MCP server that cannot start too)
        if isinstance(error, UsageError) or server_failed(error):
            usage(usage_text(error))
        no_model = missing_model(error, agent)
        if no_model is not None:
            usage(no_model)
        fail(
            explained(error, endpoint) + key_advice(error, agent)
            if error is not None
            else result.status.code
        )


def _with_fallbacks(agent: Agent, fallbacks: tuple[str, ...], host: PluginHost) -> Agent:
    """``agent`` with ``--fallback`` models (an unknown provider is a usage error), each
    provider other than the agent's own with its key as ``KeyResolver`` finds it: the key
    store is read for these providers only, never for every provider it holds keys for."""
    if not fallbacks:
        return agent
    import attrs

    from ..agent import Agent
    from ._keys import KeyResolver

    try:
        config = attrs.evolve(agent.config, fallback_models=fallbacks)
    except (TypeError, ValueError) as exc:
        usage(f"--fallback: {exc}")
    resolver = KeyResolver(host)
    keys: dict[str, str] = {}
    for name in fallbacks:
        provider = name.partition(":")[0]
        if provider == config.provider or provider in keys:
            continue
        key = resolver.key(provider)
        if key is not None:
            keys[provider] = key
    return Agent(config, plugins=host, fallback_keys=keys)


def _fallbacks_shown(report: ProgressEmitter) -> ProgressEmitter:
    """``report`` that also says on stderr when another model answers (``fallback``)."""

    def reported(event_type: str, data: dict[str, Any]) -> None:
        if event_type != "fallback":
            report(event_type, data)
            return
        for skipped in data.get("skipped", ()):
            click.echo(f"fallback: skipping {skipped['model']} ({skipped['reason']})", err=True)
        to = data.get("to")
        if to is not None:
            click.echo(f"falling back: {data.get('from')} failed; trying {to}", err=True)

    return reported


def _output_schema(schema: str | None, multi: str | None) -> dict[str, Any] | None:
    """The JSON Schema of ``--schema`` or ``--schema-multi`` (None without them); a bad one
    is a usage error (exit status 2) before anything starts, in the option's words."""
    if schema is not None and multi is not None:
        usage("give --schema or --schema-multi, not both")
    value, option = (schema, "--schema") if multi is None else (multi, "--schema-multi")
    if value is None:
        return None
    from .._output import output_spec
    from ..errors import OutputTypeError
    from ._schema import SchemaError, load_schema, multi_schema

    try:
        loaded = load_schema(value, option)
        output_spec(loaded)
    except SchemaError as error:
        usage(str(error))
    except OutputTypeError as error:
        usage(f"{option} cannot be used: {error.reason}")
    return loaded if multi is None else multi_schema(loaded)


def _size(text: str) -> int:
    """``--max-bytes`` values: bytes, or with a K, M or G suffix (powers of 1024)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    cleaned = text.strip().lower().removesuffix("ib").removesuffix("b")
    factor = units.get(cleaned[-1:], 1)
    number = cleaned[:-1] if cleaned[-1:] in units else cleaned
    try:
        value = int(number) * factor
    except ValueError:
        value = 0
    if value < 1:
        usage(f"--max-bytes {text}: not a positive size (like 1048576, 512K, 64M or 1G)")
    return value


def _conversation_file(file: str | None, messages_file: str | None) -> str:
    """The one conversation file of ``validate``: FILE or ``--messages FILE``, not both."""
    if file is not None and messages_file is not None and file != messages_file:
        usage(f"two conversation files ({file} and --messages {messages_file}): give one")
    chosen = file or messages_file
    if chosen is None:
        usage("give the conversation FILE to check (- reads stdin)")
    return chosen


@click.command()
@click.argument("file", required=False, metavar="[FILE]")
@click.option(
    "--messages",
    "messages_file",
    default=None,
    metavar="FILE",
    help="The conversation to check, as `run --messages` takes it (the same as FILE).",
)
@click.option(
    "--max-bytes",
    "max_bytes",
    default="64M",
    show_default=True,
    metavar="SIZE",
    help="Refuse a larger file before reading it (bytes, or with K, M, G).",
)
@command_guard
def validate(file: str | None, messages_file: str | None, max_bytes: str) -> None:
    """Check a JSON conversation (FILE, or - for stdin) and describe each message; exit 1 if
    it is invalid."""
    from ..default_plugins.echo import describe_message
    from ..errors import OmaError
    from ..validation import load_messages

    path = _conversation_file(file, messages_file)
    limit = _size(max_bytes)
    if path != "-" and check_json_file(path, limit):
        from ._validate import described_messages

        described = described_messages(path)  # a valid file, read streaming
        if described is not None:
            for index, line in enumerate(described):
                click.echo(f"messages[{index}] {line}")
            click.echo(f"valid: {len(described)} message{'s' if len(described) != 1 else ''}")
            return
    data = conversation_of(read_json(path, limit))  # its error, said the whole-file way
    try:
        messages = load_messages(data)
    except OmaError as exc:
        fail(f"invalid: {exc}")
    for index, message in enumerate(messages):
        click.echo(f"messages[{index}] {describe_message(message)}")
    click.echo(f"valid: {len(messages)} message{'s' if len(messages) != 1 else ''}")


def _not_a_file_name(prompt: str | None, messages_file: str | None) -> None:
    """``render`` takes ``run``'s arguments: PROMPT is text. A PROMPT that is only the name
    of an existing file (``oma render conversation.json``) is ambiguous: refused with the
    option that takes a file."""
    import os

    if prompt is None or messages_file is not None or prompt != prompt.strip() or not prompt:
        return
    if any(character.isspace() for character in prompt) or not os.path.isfile(prompt):
        return
    if prompt.lower().endswith(".json"):
        way = f"render the conversation in it with --messages {prompt}"
    else:
        way = f"attach it with -a {prompt}, or render a conversation file with --messages FILE"
    usage(
        f"PROMPT {prompt} names a file, and render takes PROMPT as text (as run does): {way}; "
        f"to send the name as text, pipe it (echo {prompt} | oma render)"
    )


@click.command()
@input_options
@template_options
@click.option("--full", is_flag=True, help="Print base64 payloads whole.")
@click.option(
    "--schema", default=None, metavar="SCHEMA", help="As for `oma run`: show the body with it."
)
@click.option(
    "--schema-multi",
    default=None,
    metavar="SCHEMA",
    help="As for `oma run`: show the body with it.",
)
@click.option("--no-stream", is_flag=True, help="The body of `oma run --no-stream` (Agent.run).")
@command_guard
def render(
    prompt: str | None,
    media: MediaOptions,
    agent_options: AgentOptions,
    messages_file: str | None,
    full: bool,
    schema: str | None,
    schema_multi: str | None,
    no_stream: bool,
) -> None:
    """Print the JSON body a provider would send for this input (the arguments of `oma run`:
    PROMPT is text, --messages FILE a conversation, --schema the output); send nothing. The
    body is the one `oma run` sends: a streaming one, unless --no-stream."""
    from .._settings import RunSettings
    from ..plugins import PluginHost

    _not_a_file_name(prompt, messages_file)
    output_type = _output_schema(schema, schema_multi)
    host = PluginHost.default()
    run_input = build_input(prompt, media, messages_file, provider_limits=False)
    agent = make_agent(agent_options, host)
    settings = RunSettings(output_type=output_type)
    body = asyncio.run(_render(agent, run_input, host, settings, stream=not no_stream))
    click.echo(json.dumps(body if full else shorten(body), ensure_ascii=False, indent=2))


async def _streaming_body(
    agent: Agent, request: ProviderRequest, host: PluginHost, body: dict[str, Any]
) -> dict[str, Any]:
    """The body a streaming run sends (``_capture``), where the provider streams; else
    ``body`` (``render()``'s), with a note when a provider that talks HTTP sent nothing (one
    that does not, such as echo, has no other body to show)."""
    from ._capture import streamed_body

    if not callable(getattr(agent.provider(), "stream", None)):
        return body
    streamed = await streamed_body(agent, request, host)
    if streamed is not None:
        return streamed
    spec = host.provider_spec(agent.config.provider)
    if agent.config.base_url or spec.default_base_url:  # it talks HTTP, yet sent nothing
        note("the provider's streaming body could not be captured: this is --no-stream's")
    return body


async def _render(
    agent: Agent,
    run_input: str | list[Any],
    host: PluginHost,
    settings: RunSettings,
    *,
    stream: bool = False,
) -> dict[str, Any]:
    from ..errors import OmaError

    try:
        request = agent.build_request(run_input, settings=settings)
        provider = agent.provider()
        spec = host.provider_spec(agent.config.provider)
        spec.capabilities.check(request.messages, spec.display_name, sizes=False)
        for warning in agent.limit_warnings(run_input):  # shown, not sent: warn, do not refuse
            click.echo(f"warning: {warning}", err=True)
        render = getattr(provider, "render", None)
        if render is None:
            usage(f"the {spec.display_name} provider cannot render requests (it has no render())")
        try:
            body: dict[str, Any] = render(request)
        except OmaError as exc:
            no_model = missing_model(exc, agent)
            if no_model is not None:
                usage(no_model)
            raise
        if stream:
            body = await _streaming_body(agent, request, host, body)
        return body
    finally:
        await agent.aclose()
