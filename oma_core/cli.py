"""The ``oma`` command: run an agent, list plugins, validate a conversation, render a request.

click and rich are imported here only, and this module loads only when the command runs.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from . import __version__
from .errors import OmaError

if TYPE_CHECKING:
    from rich.table import Table

    from .agent import Agent
    from .capabilities import Capabilities
    from .messages import ContentBlock
    from .plugins import PluginHost
    from .results import RunResult

__all__ = ["CAPABILITY_COLUMNS", "capability_matrix", "cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])

#: The columns of the capability matrix: key -> (label, block type, role, source kind).
CAPABILITY_COLUMNS: dict[str, tuple[str, str, str, str | None]] = {
    "text": ("text", "text", "user", None),
    "image_base64": ("image base64", "image", "user", "base64"),
    "image_url": ("image url", "image", "user", "url"),
    "video_base64": ("video base64", "video", "user", "base64"),
    "video_url": ("video url", "video", "user", "url"),
    "tool_use": ("tool use", "tool_use", "assistant", None),
    "tool_result_media": ("tool-result media", "image", "tool_result", None),
}

_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/_-]+={0,2}$")
_DATA_URL = re.compile(r"^(data:[^,;]+(?:;[^,;]+)*;base64,)(.*)$", re.DOTALL)
_KEEP = 16
_SHORTEN_PAST = 64


def capability_matrix(capabilities: Capabilities) -> dict[str, str]:
    """Each column of ``CAPABILITY_COLUMNS``: "native", "forwarded" or "refused".

    "tool use" needs both ``tool_use`` in assistant turns and ``tool_result`` in user turns;
    the weaker of the two modes is shown.
    """
    matrix: dict[str, str] = {}
    for key, (_label, block_type, role, source) in CAPABILITY_COLUMNS.items():
        modes = [capabilities.mode(block_type, role, source)]
        if key == "tool_use":
            modes.append(capabilities.mode("tool_result", "user"))
        if any(mode is None for mode in modes):
            matrix[key] = "refused"
        elif all(mode is not None and mode.value == "native" for mode in modes):
            matrix[key] = "native"
        else:
            matrix[key] = "forwarded"
    return matrix


# -- helpers -----------------------------------------------------------------------------------


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(1)


def _default_provider() -> str:
    return os.environ.get("OMA_PROVIDER") or "echo"


def _is_url(value: str) -> bool:
    return "://" in value or value.lower().startswith("data:")


def _media_block(value: str, kind: str) -> ContentBlock:
    """An image or video block: a URL stays a URL; a local file (its media type from its
    extension) and a ``data:...;base64,`` URL become base64."""
    from . import media

    inline = _DATA_URL.match(value)
    if inline:  # a data: URL carries the bytes: it becomes a base64 block, like a file
        header, data = inline.groups()
        media_type = header[len("data:") :].split(";", 1)[0].strip().lower()
        return _base64_block(kind, data, media_type)
    if _is_url(value):
        return media.image_url(value) if kind == "image" else media.video_url(value)
    path = Path(value)
    if not path.is_file():
        raise click.BadParameter(f"no such file: {value}", param_hint=f"--{kind}")
    table = media.IMAGE_EXTENSIONS if kind == "image" else media.VIDEO_EXTENSIONS
    media_type = table.get(path.suffix.lower().lstrip("."))
    if media_type is None:
        known = ", ".join(sorted(table))
        raise click.BadParameter(
            f"cannot tell the {kind} type of {path.name}; known extensions: {known}",
            param_hint=f"--{kind}",
        )
    return _base64_block(kind, base64.b64encode(path.read_bytes()).decode("ascii"), media_type)


def _base64_block(kind: str, data: str, media_type: str) -> ContentBlock:
    from . import media

    if kind == "image":
        return media.image_base64(data, media_type)
    return media.video_base64(data, media_type)


def _read_json(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        _fail(f"cannot read {path}: {exc.strerror or exc}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{path} is not valid JSON: {exc}")


def _conversation_of(data: Any) -> Any:
    """A conversation file holds a list of messages or ``{"messages": [...]}``."""
    if isinstance(data, Mapping) and "messages" in data:
        return data["messages"]
    return data


def _build_input(
    prompt: str | None, images: Sequence[str], videos: Sequence[str], messages_file: str | None
) -> str | list[Any]:
    """The run's input: a plain prompt, or messages (a file's conversation and/or one turn)."""
    if not (prompt or images or videos or messages_file):
        raise click.UsageError("give a PROMPT, an --image, a --video or --messages FILE")
    if messages_file is None and not images and not videos:
        assert prompt is not None
        return prompt
    conversation: list[Any] = []
    if messages_file is not None:
        loaded = _conversation_of(_read_json(messages_file))
        if not isinstance(loaded, list):
            _fail(f"{messages_file} must hold a list of messages or an object with 'messages'")
        conversation.extend(loaded)
    blocks: list[Any] = []
    if prompt:
        blocks.append({"type": "text", "text": prompt})
    blocks.extend(_media_block(value, "image") for value in images)
    blocks.extend(_media_block(value, "video") for value in videos)
    if blocks:
        conversation.append({"role": "user", "content": blocks})
    return conversation


def _input_options(function: F) -> F:
    """The options ``run`` and ``render`` share: what to send and to whom."""
    options = [
        click.argument("prompt", required=False),
        click.option(
            "-p",
            "--provider",
            default=None,
            help="Registered provider name (default: $OMA_PROVIDER or echo).",
        ),
        click.option("-m", "--model", default=None, help="Model name."),
        click.option("--system", "system_prompt", default=None, help="System prompt."),
        click.option(
            "--image",
            "images",
            multiple=True,
            metavar="PATH_OR_URL",
            help="Attach an image (a local file is sent as base64).",
        ),
        click.option(
            "--video",
            "videos",
            multiple=True,
            metavar="PATH_OR_URL",
            help="Attach a video (a local file is sent as base64).",
        ),
        click.option(
            "--messages",
            "messages_file",
            default=None,
            metavar="FILE",
            type=click.Path(dir_okay=False),
            help="A JSON conversation to send; PROMPT, if given, is appended.",
        ),
        click.option("--base-url", default=None, help="Override the provider's base URL."),
        click.option("--api-key", default=None, help="API key (default: the plugin's env var)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _make_agent(
    provider: str | None,
    model: str | None,
    system_prompt: str | None,
    base_url: str | None,
    api_key: str | None,
    backend: dict[str, Any] | None = None,
) -> Agent:
    from .agent import Agent, AgentConfig

    config = AgentConfig(
        name="oma",
        provider=provider or _default_provider(),
        model=model,
        system_prompt=system_prompt,
        base_url=base_url,
        api_key=api_key,
        backend=backend,
    )
    return Agent(config)


def _result_json(result: RunResult) -> dict[str, Any]:
    error = result.status.error
    return {
        "success": result.success,
        "output": result.output,
        "usage": {
            "input_tokens": result.usage.input_tokens,
            "output_tokens": result.usage.output_tokens,
        },
        "status": {"code": result.status.code, "error": None if error is None else str(error)},
    }


async def _execute(agent: Agent, run_input: str | list[Any], *, stream: bool) -> RunResult | None:
    """Run (or stream) once, then close the provider the agent created."""
    try:
        if stream:
            return await _stream(agent, run_input)
        return await agent.run(run_input)
    finally:
        await agent.aclose()


async def _stream(agent: Agent, run_input: str | list[Any]) -> RunResult | None:
    events = agent.stream(run_input)
    result = None
    printed = False
    async for event in events:
        if event.type == "text":
            click.echo(event.data, nl=False)
            sys.stdout.flush()
            printed = True
        elif event.type == "done":
            result = event.data
    if printed:
        click.echo()
    return result


def _shorten(value: Any) -> Any:
    """Shorten base64 payloads in a rendered body: 16 characters and the length left out."""
    if isinstance(value, Mapping):
        return {key: _shorten(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shorten(item) for item in value]
    if isinstance(value, str) and len(value) > _SHORTEN_PAST:
        match = _DATA_URL.match(value)
        if match:
            prefix, payload = match.groups()
            return f"{prefix}{payload[:_KEEP]}...[{len(payload)} chars]"
        if _BASE64_RUN.match(value):
            return f"{value[:_KEEP]}...[{len(value)} chars]"
    return value


# -- commands ----------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oma")
def cli() -> None:
    """Run LLM agents on structured, multimodal input. Providers are plugins."""


@cli.command()
@_input_options
@click.option("--no-stream", is_flag=True, help="Wait for the whole answer (Agent.run).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as a JSON object.")
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
def run(
    prompt: str | None,
    provider: str | None,
    model: str | None,
    system_prompt: str | None,
    images: tuple[str, ...],
    videos: tuple[str, ...],
    messages_file: str | None,
    base_url: str | None,
    api_key: str | None,
    no_stream: bool,
    as_json: bool,
    backend_kind: str | None,
    backend_command: str | None,
    backend_args: tuple[str, ...],
) -> None:
    """Send PROMPT (and any media or conversation) to a provider and print the answer."""
    backend: dict[str, Any] | None = None
    if backend_kind is not None:
        backend = {"kind": backend_kind}
        if backend_command is not None:
            backend["command"] = backend_command
        if backend_args:
            backend["args"] = list(backend_args)
    elif backend_command is not None or backend_args:
        raise click.UsageError("--command and --arg need --backend")
    try:
        run_input = _build_input(prompt, images, videos, messages_file)
        agent = _make_agent(provider, model, system_prompt, base_url, api_key, backend)
        result = asyncio.run(_execute(agent, run_input, stream=not (no_stream or as_json)))
    except OmaError as exc:
        _fail(str(exc))
    if result is None:  # pragma: no cover - every stream ends with "done"
        _fail("the run ended without a result")
    if as_json:
        click.echo(json.dumps(_result_json(result), ensure_ascii=False, indent=2))
    elif no_stream and result.success:
        click.echo(result.output)
    if not result.success:
        _fail(str(result.status.error or result.status.code))


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
def validate(file: str) -> None:
    """Check a JSON conversation and describe each message; exit 1 if it is invalid."""
    from .default_plugins.echo import describe_message
    from .validation import load_messages

    data = _conversation_of(_read_json(file))
    try:
        messages = load_messages(data)
    except OmaError as exc:
        _fail(f"invalid: {exc}")
    for index, message in enumerate(messages):
        click.echo(f"messages[{index}] {describe_message(message)}")
    click.echo(f"valid: {len(messages)} message{'s' if len(messages) != 1 else ''}")


@cli.command()
@_input_options
@click.option("--full", is_flag=True, help="Print base64 payloads whole.")
def render(
    prompt: str | None,
    provider: str | None,
    model: str | None,
    system_prompt: str | None,
    images: tuple[str, ...],
    videos: tuple[str, ...],
    messages_file: str | None,
    base_url: str | None,
    api_key: str | None,
    full: bool,
) -> None:
    """Print the JSON body a provider would send for this input; send nothing."""
    try:
        run_input = _build_input(prompt, images, videos, messages_file)
        agent = _make_agent(provider, model, system_prompt, base_url, api_key)
        body = asyncio.run(_render(agent, run_input))
    except OmaError as exc:
        _fail(str(exc))
    click.echo(json.dumps(body if full else _shorten(body), ensure_ascii=False, indent=2))


async def _render(agent: Agent, run_input: str | list[Any]) -> dict[str, Any]:
    from .plugins import PluginHost

    try:
        request = agent.build_request(run_input)
        provider = agent.provider()
        spec = PluginHost.default().provider_spec(agent.config.provider)
        spec.capabilities.check(request.messages, spec.display_name)
        render = getattr(provider, "render", None)
        if render is None:
            _fail(f"the {spec.display_name} provider cannot render requests (it has no render())")
        body: dict[str, Any] = render(request)
        return body
    finally:
        await agent.aclose()


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins, load errors and what each provider can carry."""
    from .plugins import PluginHost

    host = PluginHost.default()
    report = _plugins_report(host)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    _print_plugins(report)


def _plugins_report(host: PluginHost) -> dict[str, Any]:
    infos = host.plugin_info()
    provider_owner = {p: info.name for info in infos for p in info.providers}
    backend_owner = {b: info.name for info in infos for b in info.backends}
    return {
        "plugins": [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "builtin": info.builtin,
                "providers": list(info.providers),
                "backends": list(info.backends),
                "scorers": info.scorers,
                "hooks": list(info.hooks),
            }
            for info in infos
        ],
        "failures": [
            {"name": f.name, "distribution": f.distribution, "stage": f.stage, "error": f.error}
            for f in host.failures
        ],
        "providers": {
            name: {
                "display_name": spec.display_name,
                "plugin": provider_owner.get(name),
                "description": spec.description,
                "default_model": spec.default_model,
                "capabilities": capability_matrix(spec.capabilities),
            }
            for name, spec in host.provider_specs().items()
        },
        "backends": {
            kind: {
                "display_name": spec.display_name,
                "plugin": backend_owner.get(kind),
                "text_only": spec.text_only,
                "description": spec.description,
            }
            for kind, spec in host.backend_specs().items()
        },
        "shadowed": host.shadowed(),
    }


#: Cell labels of the capability matrix when the full words do not fit the terminal.
_SHORT_MODES = {"native": "native", "forwarded": "fwd", "refused": "no"}
_MODE_STYLES = {"native": "green", "forwarded": "yellow", "refused": "red"}


def _print_plugins(report: dict[str, Any]) -> None:
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.measure import Measurement
    from rich.table import Table

    console = Console()
    table = Table(title="Plugins", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("plugin", overflow="fold")
    table.add_column("version", no_wrap=True)
    table.add_column("providers", overflow="fold")
    table.add_column("backends", overflow="fold")
    table.add_column("hooks", no_wrap=True)  # one per line: a hook name is never cut
    for info in report["plugins"]:
        if info["builtin"]:
            label = escape(info["name"].rpartition(".")[2]) + " [dim](built-in)[/dim]"
        else:
            label = escape(info["name"])
            if info["distribution"]:
                label += f" [dim]({escape(info['distribution'])})[/dim]"
        table.add_row(
            label,
            escape(info["version"] or ""),
            escape(", ".join(info["providers"])),
            escape(", ".join(info["backends"])),
            "\n".join(info["hooks"]),
        )
    console.print(table)

    matrix = _capability_table(report, _MODE_NAMES)
    unbounded = console.options.update_width(10_000)
    short = Measurement.get(console, unbounded, matrix).maximum > console.width
    if short:
        matrix = _capability_table(report, _SHORT_MODES)
    console.print(matrix)
    if short:
        console.print("fwd: forwarded for the service to judge; no: refused before any request")

    if report["backends"]:
        backends = Table(title="Backends", title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("kind", "name", "input"):
            backends.add_column(column)
        for kind, entry in report["backends"].items():
            text_only = "text prompts only" if entry["text_only"] else "structured"
            backends.add_row(escape(kind), escape(entry["display_name"]), text_only)
        console.print(backends)

    for note in report["shadowed"]:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    for failure in report["failures"]:
        where = f" ({failure['distribution']})" if failure["distribution"] else ""
        console.print(
            f"[red]failed to load[/red] {escape(failure['name'] + where)} at "
            f"{failure['stage']}: {escape(failure['error'])}"
        )


_MODE_NAMES = {mode: mode for mode in _MODE_STYLES}


def _capability_table(report: dict[str, Any], names: Mapping[str, str]) -> Table:
    """The capability matrix: a row per provider, a column per ``CAPABILITY_COLUMNS`` key."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    matrix = Table(
        title="What each provider can carry",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    matrix.add_column("provider", overflow="fold")
    for label, *_ in CAPABILITY_COLUMNS.values():
        matrix.add_column(label.replace(" ", "\n", 1), no_wrap=True)
    for name, entry in report["providers"].items():
        cells = [
            f"[{_MODE_STYLES[mode]}]{names[mode]}[/{_MODE_STYLES[mode]}]"
            for mode in entry["capabilities"].values()
        ]
        matrix.add_row(escape(name), *cells)
    return matrix


def main(argv: Sequence[str] | None = None) -> None:
    """The console-script entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="oma")
