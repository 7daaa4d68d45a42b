"""What to say about a provider or backend name no plugin registered: the did-you-mean, and
the package of this repository to install.

Apart from ``resolution`` so that the plugin host can build that error without importing
what a config's names mean (``resolution`` imports the host).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from .errors import MediaTooLargeError, NotRegisteredError, UnsupportedContentBlockError

if TYPE_CHECKING:
    from .capabilities import ProviderSpec

__all__ = [
    "KNOWN_BACKENDS",
    "KNOWN_DISTRIBUTIONS",
    "KNOWN_TOOLSETS",
    "not_registered",
    "suggest",
    "takers_hint",
]

#: Provider names the plugins of this repository register, and the distribution of each
#: (``plugins/<distribution>/``); held to the plugins' own registrations by a test.
KNOWN_DISTRIBUTIONS: Final[Mapping[str, str]] = {
    "anthropic": "oma-anthropic",
    "bedrock": "oma-bedrock",
    "gemini": "oma-gemini",
    "litellm": "oma-litellm",
    "mistral": "oma-mistral",
    **{
        name: "oma-openai"
        for name in (
            "openai",
            "minimax",
            "deepseek",
            "groq",
            "openrouter",
            "together",
            "ollama",
            "vllm",
            "lmstudio",
            "openai-compatible",
        )
    },
}

#: Backend kinds the plugins of this repository register, and the distribution of each.
KNOWN_BACKENDS: Final[Mapping[str, str]] = {"acp": "oma-acp", "process": "oma-process"}

#: Toolset kinds the plugins of this repository register, and the distribution of each.
KNOWN_TOOLSETS: Final[Mapping[str, str]] = {"mcp": "oma-mcp"}


def suggest(name: str, names: Iterable[str]) -> tuple[str, ...]:
    """The names close to ``name`` (difflib's did-you-mean), closest first, at most three."""
    return tuple(difflib.get_close_matches(name, list(names), n=3, cutoff=0.7))


def not_registered(
    name: str, available: Iterable[str], *, kind: str = "provider", note: str = ""
) -> NotRegisteredError:
    """The error for a provider (``kind="provider"``), backend kind (``"backend"``) or
    toolset kind (``"toolset"``) no plugin registered: what is available, the close names,
    and which package to install when this repository has a plugin for the name (or for the
    close name it was probably meant to be). ``note`` is appended (plugins that failed to
    load)."""
    available = tuple(available)
    known = {"provider": KNOWN_DISTRIBUTIONS, "toolset": KNOWN_TOOLSETS}.get(kind, KNOWN_BACKENDS)
    suggestions = suggest(name, {*available, *known})
    meant = name if name in known else next((s for s in suggestions if s not in available), None)
    distribution = known.get(meant) if meant is not None else None
    if name in known:  # the right name, its plugin missing: a did-you-mean would only confuse
        suggestions = ()
    what, plural = {
        "provider": ("provider", "providers"),
        "toolset": ("toolset kind", "toolset kinds"),
    }.get(kind, ("backend kind", "backends"))
    message = f"unknown {what} {name!r}"
    if suggestions:
        message += f" (did you mean {' or '.join(repr(s) for s in suggestions)}?)"
    message += f"; available {plural}: {', '.join(available) or 'none'}"
    if distribution is not None:
        message += (
            f'. The {what} "{meant}" comes from the {distribution} plugin, which is not '
            f"installed: pip install {distribution} (from a checkout of oma: "
            f"pip install -e plugins/{distribution})"
        )
    return NotRegisteredError(
        message + note,
        name=name,
        kind=kind,
        available=available,
        suggestions=suggestions,
        distribution=distribution,
    )


#: The block types of media, whose refusal names the providers that take them, as said.
_MEDIA = {"image": "images", "video": "video", "document": "documents", "audio": "audio"}


def takers_hint(error: BaseException, installed: Callable[[], Mapping[str, ProviderSpec]]) -> str:
    """For a provider that refused a kind of media outright (``UnsupportedContentBlockError``
    "not supported", not a size or a source): ``; providers that take audio: ...``, those of
    ``installed()`` (the caller's host's specs, asked for only then) whose user messages
    carry it (the offline and test providers, which carry everything, left out); else ""."""
    from .capabilities import Capabilities

    if not isinstance(error, UnsupportedContentBlockError) or isinstance(error, MediaTooLargeError):
        return ""
    if error.block_type not in _MEDIA or not (error.detail or "").startswith("not supported"):
        return ""
    everything = Capabilities.everything()
    takers = sorted(
        name
        for name, spec in installed().items()
        if spec.capabilities != everything and spec.capabilities.find(error.block_type, "user")
    )
    if not takers:
        return ""
    return f"; providers that take {_MEDIA[error.block_type]}: {', '.join(takers)}"
