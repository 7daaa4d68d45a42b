"""What ``oma run`` and ``oma render`` share: the input options, reading files, building the
input and the agent, and shortening payloads for display."""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from ..agent import Agent
    from ..messages import ContentBlock

F = TypeVar("F", bound=Callable[..., Any])

_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/_-]+={0,2}$")
_DATA_URL = re.compile(r"^(data:[^,;]+(?:;[^,;]+)*;base64,)(.*)$", re.DOTALL)
_KEEP = 16
_SHORTEN_PAST = 64


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(1)


def default_provider() -> str:
    return os.environ.get("OMA_PROVIDER") or "echo"


def is_url(value: str) -> bool:
    return "://" in value or value.lower().startswith("data:")


def media_block(value: str, kind: str) -> ContentBlock:
    """An image or video block: a URL stays a URL; a local file (its media type from its
    extension) and a ``data:...;base64,`` URL become base64."""
    from .. import media

    inline = _DATA_URL.match(value)
    if inline:  # a data: URL carries the bytes: it becomes a base64 block, like a file
        header, data = inline.groups()
        media_type = header[len("data:") :].split(";", 1)[0].strip().lower()
        return base64_block(kind, data, media_type)
    if is_url(value):
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
    return base64_block(kind, base64.b64encode(path.read_bytes()).decode("ascii"), media_type)


def base64_block(kind: str, data: str, media_type: str) -> ContentBlock:
    from .. import media

    if kind == "image":
        return media.image_base64(data, media_type)
    return media.video_base64(data, media_type)


def read_json(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc}")


def conversation_of(data: Any) -> Any:
    """A conversation file holds a list of messages or ``{"messages": [...]}``."""
    if isinstance(data, Mapping) and "messages" in data:
        return data["messages"]
    return data


def build_input(
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
        loaded = conversation_of(read_json(messages_file))
        if not isinstance(loaded, list):
            fail(f"{messages_file} must hold a list of messages or an object with 'messages'")
        conversation.extend(loaded)
    blocks: list[Any] = []
    if prompt:
        blocks.append({"type": "text", "text": prompt})
    blocks.extend(media_block(value, "image") for value in images)
    blocks.extend(media_block(value, "video") for value in videos)
    if blocks:
        conversation.append({"role": "user", "content": blocks})
    return conversation


def input_options(function: F) -> F:
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


def make_agent(
    provider: str | None,
    model: str | None,
    system_prompt: str | None,
    base_url: str | None,
    api_key: str | None,
    backend: dict[str, Any] | None = None,
) -> Agent:
    from ..agent import Agent, AgentConfig

    config = AgentConfig(
        name="oma",
        provider=provider or default_provider(),
        model=model,
        system_prompt=system_prompt,
        base_url=base_url,
        api_key=api_key,
        backend=backend,
    )
    return Agent(config)


def shorten(value: Any) -> Any:
    """Shorten base64 payloads in a rendered body: 16 characters and the length left out."""
    if isinstance(value, Mapping):
        return {key: shorten(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shorten(item) for item in value]
    if isinstance(value, str) and len(value) > _SHORTEN_PAST:
        match = _DATA_URL.match(value)
        if match:
            prefix, payload = match.groups()
            return f"{prefix}{payload[:_KEEP]}...[{len(payload)} chars]"
        if _BASE64_RUN.match(value):
            return f"{value[:_KEEP]}...[{len(value)} chars]"
    return value


# -- commands ----------------------------------------------------------------------------------
