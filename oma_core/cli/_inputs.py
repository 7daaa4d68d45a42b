"""What ``oma run`` and ``oma render`` share: the input options, reading files, building the
input, and shortening payloads for display."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, TypeVar

import attrs
import click

from ._agent import AgentOptions
from ._exits import stdin_is_piped, usage

F = TypeVar("F", bound=Callable[..., Any])

_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/_-]+={0,2}$")
_DATA_URL = re.compile(r"^(data:[^,;]+(?:;[^,;]+)*;base64,)(.*)$", re.DOTALL)
_KEEP = 16
_SHORTEN_PAST = 64


@attrs.frozen
class MediaOptions:
    """The attachments as given: ``-a``, ``--attach-type`` pairs, ``--image``, ``--video``;
    ``target``, the agent options of the same command, says whose size limits apply."""

    attach: tuple[str, ...] = ()
    attach_types: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()
    videos: tuple[str, ...] = ()
    target: AgentOptions | None = None


#: The largest JSON file, or piped text on stdin, read by default: 64 MiB.
DEFAULT_MAX_JSON_BYTES = 64 * 1024 * 1024


def read_json(path: str, max_bytes: int | None = None) -> Any:
    """A JSON file's data (``-``: stdin's); an unreadable, binary, broken or too large file is
    one ``error:`` line. A regular file's size is checked before it is read; anything else (a
    pipe, stdin) is read no further than one byte past ``max_bytes`` (None:
    ``DEFAULT_MAX_JSON_BYTES``; a command that passes it has a ``--max-bytes`` option)."""
    hint = "" if max_bytes is None else " (--max-bytes SIZE sets it)"
    limit = DEFAULT_MAX_JSON_BYTES if max_bytes is None else max_bytes

    if path == "-":
        from ._attach import Stdin

        Stdin().take()
        return _parse_json(_bounded(sys.stdin.buffer, limit, "stdin", hint), "stdin")
    check_json_file(path, max_bytes)
    try:
        with open(path, "rb") as file:
            raw = _bounded(file, limit, path, hint)
    except OSError as exc:
        usage(f"cannot read {path}: {exc.strerror or exc}")
    return _parse_json(raw, path)


def check_json_file(path: str, max_bytes: int | None = None) -> bool:
    """Refuse (one ``error:`` line, exit 2) a JSON file ``read_json`` would refuse before
    reading it: missing, unreadable, a directory, a regular file over the limit. True for a
    regular file (one that can be read twice), False for anything else (a FIFO, a device)."""
    import os
    import stat

    hint = "" if max_bytes is None else " (--max-bytes SIZE sets it)"
    limit = DEFAULT_MAX_JSON_BYTES if max_bytes is None else max_bytes
    try:
        mode = os.stat(path)
    except FileNotFoundError:
        usage(f"no such file: {path}")
    except OSError as exc:
        usage(f"cannot read {path}: {exc.strerror or exc}")
    if stat.S_ISDIR(mode.st_mode):
        usage(f"{path} is a directory, not a JSON file")
    if stat.S_ISREG(mode.st_mode) and mode.st_size > limit:
        usage(f"{path} is {mode.st_size} bytes, past the limit of {limit} bytes{hint}")
    return stat.S_ISREG(mode.st_mode)


def _bounded(stream: BinaryIO, max_bytes: int, name: str, hint: str) -> bytes:
    """At most ``max_bytes`` of ``stream``, in chunks; one byte more is a usage error."""
    chunks: list[bytes] = []
    left = max_bytes + 1
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    if left <= 0:
        usage(f"{name} holds more than the limit of {max_bytes} bytes{hint}")
    return b"".join(chunks)


def _parse_json(raw: bytes, path: str) -> Any:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        where = "-" if path == "stdin" else path
        usage(f"{path} is not UTF-8 text (an image or video? attach it with -a {where})")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        usage(f"{path} is not valid JSON: {exc}")


def conversation_of(data: Any) -> Any:
    """A conversation file holds a list of messages or ``{"messages": [...]}``."""
    if isinstance(data, Mapping) and "messages" in data:
        return data["messages"]
    return data


def build_input(
    prompt: str | None,
    media: MediaOptions,
    messages_file: str | None,
    agent_options: AgentOptions | None = None,
    *,
    provider_limits: bool = True,
) -> str | list[Any]:
    """The run's input: a plain prompt, or messages (a file's conversation and/or one turn).

    Piped text on stdin (when ``-a -`` does not take stdin) is appended to the prompt.
    Attachments are refused past the limits of the provider ``agent_options`` (default:
    ``media.target``) names, before they are read; with ``provider_limits`` False (``oma
    render``, which warns instead) only oma's own ceiling bounds them.
    """
    from ._attach import Stdin, attachments, limits_for

    values = (*media.attach, *(v for v, _ in media.attach_types), *media.images, *media.videos)
    if messages_file == "-" and "-" in values:
        usage("stdin can be read once: --messages - and -a - cannot both take it")
    stdin = Stdin()
    target = agent_options or media.target
    limits = limits_for(target) if values and provider_limits else None
    media_blocks = attachments(
        media.attach, media.attach_types, media.images, media.videos, stdin, limits
    )
    if messages_file != "-" and not stdin.used and stdin_is_piped():
        piped = _stdin_text()
        if piped.strip():
            prompt = f"{prompt}\n\n{piped}" if prompt else piped
    if not (prompt or media_blocks or messages_file):
        usage("give a PROMPT (or pipe text on stdin), -a FILE or --messages FILE")
    if messages_file is None and not media_blocks:
        assert prompt is not None
        return prompt
    conversation: list[Any] = []
    if messages_file is not None:
        loaded = conversation_of(read_json(messages_file))
        if not isinstance(loaded, list):
            usage(f"{messages_file} must hold a list of messages or an object with 'messages'")
        conversation.extend(loaded)
    blocks: list[Any] = []
    if prompt:
        blocks.append({"type": "text", "text": prompt})
    blocks.extend(media_blocks)
    if blocks:
        conversation.append({"role": "user", "content": blocks})
    return conversation


def _stdin_text() -> str:
    """Piped text, read no further than ``DEFAULT_MAX_JSON_BYTES`` (``cat /dev/zero | oma run``
    stops there)."""
    data = _bounded(sys.stdin.buffer, DEFAULT_MAX_JSON_BYTES, "piped stdin", "")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        usage("stdin is not UTF-8 text; to send an image or video from stdin, use -a -")


def continue_options(function: F) -> F:
    """``-c/--continue`` and ``--cid ID``, the logged conversation ``run`` and ``chat`` go on
    with (``continue_last`` and ``conversation_id`` for the command)."""
    function = click.option(
        "--cid", "conversation_id", default=None, metavar="ID", help="Continue conversation ID."
    )(function)
    return click.option(
        "-c", "--continue", "continue_last", is_flag=True, help="Continue the last conversation."
    )(function)


def input_options(function: F) -> F:
    """The options ``run`` and ``render`` share: what to send and to whom. The command gets
    ``media`` (``MediaOptions``) and ``agent_options`` (``AgentOptions``) for them."""
    options = [
        click.argument("prompt", required=False),
        click.option(
            "-m",
            "--model",
            default=None,
            help="PROVIDER:MODEL (e.g. openai:gpt-4o), or MODEL with -p (default: $OMA_MODEL).",
        ),
        click.option(
            "-p",
            "--provider",
            default=None,
            help="Registered provider name (default: $OMA_PROVIDER; echo if no model either).",
        ),
        click.option("-s", "--system", "system_prompt", default=None, help="System prompt."),
        click.option(
            "-a",
            "--attach",
            multiple=True,
            metavar="PATH|URL|-",
            help=(
                "Attach an image, video, document or audio clip (a file, or - for stdin, "
                "typed by its content)."
            ),
        ),
        click.option(
            "--attach-type",
            "--at",
            "attach_types",
            multiple=True,
            nargs=2,
            metavar="PATH_OR_URL MIME",
            help="Attach PATH_OR_URL as this media type (e.g. a URL without an extension).",
        ),
        click.option(
            "--image",
            "images",
            multiple=True,
            metavar="PATH_OR_URL",
            help="Attach an image (like -a; it must be one).",
        ),
        click.option(
            "--video",
            "videos",
            multiple=True,
            metavar="PATH_OR_URL",
            help="Attach a video (like -a; it must be one).",
        ),
        click.option(
            "--messages",
            "messages_file",
            default=None,
            metavar="FILE",
            help="A JSON conversation to send (- reads stdin); PROMPT, if given, is appended.",
        ),
        click.option(
            "-o",
            "--option",
            "options",
            multiple=True,
            nargs=2,
            metavar="NAME VALUE",
            help="temperature, max_tokens, stop or a provider option; VALUE is JSON if it "
            "parses, else a string.",
        ),
        click.option("--base-url", default=None, help="Override the provider's base URL."),
        click.option(
            "--api-key",
            default=None,
            help="A last resort: the key lands in shell history, and other processes of your "
            "user can read it (in /proc); store it with `oma keys set PROVIDER [--base-url "
            "URL]` or set the provider's env var instead.",
        ),
    ]

    @functools.wraps(function)
    def collected(**kwargs: Any) -> Any:
        agent_options = AgentOptions(
            provider=kwargs.pop("provider"),
            model=kwargs.pop("model"),
            system_prompt=kwargs.pop("system_prompt"),
            base_url=kwargs.pop("base_url"),
            api_key=kwargs.pop("api_key"),
            options=tuple(tuple(pair) for pair in kwargs.pop("options")),
        )
        media = MediaOptions(
            tuple(kwargs.pop("attach")),
            tuple(tuple(pair) for pair in kwargs.pop("attach_types")),
            tuple(kwargs.pop("images")),
            tuple(kwargs.pop("videos")),
            agent_options,
        )
        return function(media=media, agent_options=agent_options, **kwargs)

    wrapped: Any = collected
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[no-any-return]


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
