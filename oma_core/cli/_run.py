"""``oma run``, ``oma validate`` and ``oma render``: one conversation in, an answer, a check
or a request body out."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import click

from ..errors import OmaError
from ._inputs import (
    build_input,
    conversation_of,
    fail,
    input_options,
    make_agent,
    read_json,
    shorten,
)

if TYPE_CHECKING:
    from ..agent import Agent
    from ..results import RunResult


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


@click.command()
@input_options
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
        run_input = build_input(prompt, images, videos, messages_file)
        agent = make_agent(provider, model, system_prompt, base_url, api_key, backend)
        result = asyncio.run(_execute(agent, run_input, stream=not (no_stream or as_json)))
    except OmaError as exc:
        fail(str(exc))
    if result is None:  # pragma: no cover - every stream ends with "done"
        fail("the run ended without a result")
    if as_json:
        click.echo(json.dumps(_result_json(result), ensure_ascii=False, indent=2))
    elif no_stream and result.success:
        click.echo(result.output)
    if not result.success:
        fail(str(result.status.error or result.status.code))


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
def validate(file: str) -> None:
    """Check a JSON conversation and describe each message; exit 1 if it is invalid."""
    from ..default_plugins.echo import describe_message
    from ..validation import load_messages

    data = conversation_of(read_json(file))
    try:
        messages = load_messages(data)
    except OmaError as exc:
        fail(f"invalid: {exc}")
    for index, message in enumerate(messages):
        click.echo(f"messages[{index}] {describe_message(message)}")
    click.echo(f"valid: {len(messages)} message{'s' if len(messages) != 1 else ''}")


@click.command()
@input_options
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
        run_input = build_input(prompt, images, videos, messages_file)
        agent = make_agent(provider, model, system_prompt, base_url, api_key)
        body = asyncio.run(_render(agent, run_input))
    except OmaError as exc:
        fail(str(exc))
    click.echo(json.dumps(body if full else shorten(body), ensure_ascii=False, indent=2))


async def _render(agent: Agent, run_input: str | list[Any]) -> dict[str, Any]:
    from ..plugins import PluginHost

    try:
        request = agent.build_request(run_input)
        provider = agent.provider()
        spec = PluginHost.default().provider_spec(agent.config.provider)
        spec.capabilities.check(request.messages, spec.display_name)
        render = getattr(provider, "render", None)
        if render is None:
            fail(f"the {spec.display_name} provider cannot render requests (it has no render())")
        body: dict[str, Any] = render(request)
        return body
    finally:
        await agent.aclose()
