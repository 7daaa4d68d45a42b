"""The services this plugin speaks to: OpenAI itself and OpenAI-compatible presets.

Each preset is registered as a provider of its own (``-p minimax``), with its default base URL,
the environment variable its key is read from, its display name (used in error messages) and
what it carries. Capabilities differ only where the service is known to differ; everything
else is the OpenAI set, with video and PDFs forwarded for the service to accept or refuse.
Audio is declared only where the service documents ``input_audio`` (OpenAI, OpenRouter, vLLM)
and on the generic preset.
"""

from __future__ import annotations

import attrs

from oma_core import Capabilities
from oma_core.capabilities import CacheSupport, ModelRules
from oma_core.toolkit import IN_TOOL_RESULT, BlockSupport, MediaLimit, Mode

from .caching import CACHING
from .model_rules import MODEL_RULES

__all__ = [
    "AUDIO_FORMATS",
    "PDF_TYPES",
    "PRESETS",
    "TEXT_DOCUMENT_TYPES",
    "Preset",
    "preset",
]

#: Image types OpenAI's Chat Completions documents for image_url parts.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: Documents a ``file`` part carries (OpenAI's file inputs on Chat Completions: PDF).
PDF_TYPES = frozenset({"application/pdf"})
#: Text documents, sent as a text part that names the file (every preset takes text): the
#: text types oma names files by (``oma_core.media.DOCUMENT_EXTENSIONS``).
TEXT_DOCUMENT_TYPES = frozenset(
    {
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/tab-separated-values",
        "text/html",
        "text/xml",
    }
)
#: Audio an ``input_audio`` part carries: its ``format`` is "wav" or "mp3".
AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
AUDIO_TYPES = frozenset(AUDIO_FORMATS)

_USER = frozenset({"user"})
_ASSISTANT = frozenset({"assistant"})
_IN_TOOL = frozenset({IN_TOOL_RESULT})
_BASE64 = frozenset({"base64"})


#: The output modes of a service whose docs give ``response_format`` ``json_schema`` (native),
#: and of one that documents only function calling with a forced ``tool_choice`` (tool).
#: Checked against each service's documentation on 2026-12-02 (docs/providers/openai.md).
NATIVE = frozenset({"native", "tool", "prompted"})
TOOL = frozenset({"tool", "prompted"})


def _capabilities(
    *,
    images: bool = True,
    video: bool = True,
    files: Mode | None = Mode.FORWARDED,
    pdfs: Mode | None = Mode.FORWARDED,
    pdf_urls: bool = False,
    audio: Mode | None = None,
    reasoning: Mode | None = None,
    limits: tuple[MediaLimit, ...] = (),
    output_modes: frozenset[str] = NATIVE,
    thinking: bool = False,
    models: tuple[ModelRules, ...] = (),
    caching: CacheSupport | None = None,
) -> Capabilities:
    blocks = [
        BlockSupport("text"),
        BlockSupport("tool_use", _ASSISTANT),
        BlockSupport("tool_result", _USER),
    ]
    if images:
        blocks.append(BlockSupport("image", _USER, media_types=IMAGE_TYPES))
        # Images a tool returned travel in a user message right after the tool messages.
        blocks.append(BlockSupport("image", _IN_TOOL, media_types=IMAGE_TYPES))
    if video:
        blocks.append(BlockSupport("video", _USER, mode=Mode.FORWARDED))
    # A text document is a text part: every preset carries it.
    blocks.append(BlockSupport("document", _USER, _BASE64, TEXT_DOCUMENT_TYPES))
    if files is not None:
        pdf_only = PDF_TYPES if files is Mode.NATIVE else None
        blocks.append(BlockSupport("file", _IN_TOOL, _BASE64, pdf_only, files))
    if pdfs is not None:
        # A PDF in a user turn: the same ``file`` part as a PDF a tool returned.
        pdf_sources = frozenset({"base64", "url"}) if pdf_urls else _BASE64
        blocks.append(BlockSupport("document", _USER, pdf_sources, PDF_TYPES, pdfs))
    if audio is not None:
        blocks.append(BlockSupport("audio", _USER, _BASE64, AUDIO_TYPES, audio))
    if reasoning is not None:
        blocks.append(BlockSupport("reasoning", _ASSISTANT, mode=reasoning))
    return Capabilities(
        tuple(blocks),
        limits=limits,
        output_modes=output_modes,
        thinking=thinking,
        models=models,
        caching=caching,
    )


#: OpenAI's documented image input limits: 20 MB per image, 50 MB of payload per request.
_OPENAI_LIMITS = (
    MediaLimit(20_000_000, {"image"}),
    MediaLimit(50_000_000, scope="request", measure="base64"),
)


@attrs.frozen
class Preset:
    """One OpenAI-compatible service.

    ``token_param`` is the body field ``max_tokens`` maps to; ``reasoning_field`` the assistant
    message field reasoning blocks are forwarded in (None: reasoning blocks are refused);
    ``key_placeholder`` is sent when a keyless local server gets no key (the SDK needs one).
    ``strict_output``: native mode sends ``strict: true`` (and a strict schema);
    ``strict_tools``: tool mode's function is strict too (OpenAI's strict function calling).
    """

    name: str
    display_name: str
    base_url: str | None
    api_key_env: str | None
    capabilities: Capabilities
    default_model: str | None = None
    token_param: str = "max_tokens"
    reasoning_field: str | None = None
    key_placeholder: str | None = None
    description: str = ""
    strict_output: bool = True
    strict_tools: bool = False
    #: Whether the preset is OpenAI's own service, which speaks the Responses API by default
    #: on its own host (``provider_options["api"]`` chooses) and has OpenAI's model rules.
    responses: bool = False
    #: A few current model ids from the service's models documentation (read on
    #: 2026-12-02); none for a local server, whose models are the ones it was given.
    known_models: tuple[str, ...] = ()


PRESETS: tuple[Preset, ...] = (
    Preset(
        "openai",
        "OpenAI",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        # What either API carries; each refuses locally what it cannot (Chat Completions:
        # PDF URLs and reasoning not its Responses API issued; the Responses API: video).
        _capabilities(
            files=Mode.NATIVE,
            pdfs=Mode.NATIVE,
            pdf_urls=True,
            audio=Mode.NATIVE,
            reasoning=Mode.NATIVE,
            limits=_OPENAI_LIMITS,
            thinking=True,  # reasoning.effort (reasoning_effort on Chat Completions)
            models=MODEL_RULES,
            caching=CACHING,  # implicit, and explicit breakpoints on GPT-5.6+ (caching.py)
        ),
        default_model="gpt-4o-mini",
        token_param="max_completion_tokens",
        description="OpenAI (the Responses API on api.openai.com, else Chat Completions)",
        strict_tools=True,
        responses=True,
        known_models=(
            "gpt-4o-mini",
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-5",
            "gpt-5-mini",
            "o4-mini",
        ),
    ),
    Preset(
        "minimax",
        "MiniMax",
        "https://api.minimax.io/v1",
        "MINIMAX_API_KEY",
        _capabilities(output_modes=TOOL),
        default_model="MiniMax-M2",
        description="MiniMax through its OpenAI-compatible API",
        known_models=("MiniMax-M2",),
    ),
    Preset(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        _capabilities(
            images=False,
            video=False,
            files=None,
            pdfs=None,
            reasoning=Mode.FORWARDED,
            output_modes=TOOL,
        ),
        default_model="deepseek-chat",
        reasoning_field="reasoning_content",
        description="DeepSeek (text and tools; reasoning_content forwarded)",
        known_models=("deepseek-chat", "deepseek-reasoner"),
    ),
    Preset(
        "groq",
        "Groq",
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        _capabilities(video=False, files=None, pdfs=None),
        default_model="llama-3.3-70b-versatile",
        description="Groq (text, tools, images on vision models)",
        known_models=(
            "llama-3.3-70b-versatile",
            "llama-3.1-8b-instant",
            "meta-llama/llama-4-scout-17b-16e-instruct",
            "openai/gpt-oss-120b",
        ),
        # strict: true is constrained decoding on a few models only; best-effort elsewhere
        strict_output=False,
    ),
    Preset(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        # documented: PDFs by base64 or URL for any model, wav/mp3 audio for audio models
        _capabilities(pdfs=Mode.NATIVE, pdf_urls=True, audio=Mode.NATIVE),
        default_model="openai/gpt-4o-mini",
        description="OpenRouter, a router to many models",
        # a router: a few of the many, as provider/model
        known_models=(
            "openai/gpt-4o-mini",
            "anthropic/claude-sonnet-4.5",
            "google/gemini-2.5-flash",
        ),
    ),
    Preset(
        "together",
        "Together AI",
        "https://api.together.xyz/v1",
        "TOGETHER_API_KEY",
        _capabilities(output_modes=TOOL),
        description="Together AI",
        known_models=("meta-llama/Llama-3.3-70B-Instruct-Turbo", "deepseek-ai/DeepSeek-V3"),
    ),
    Preset(
        "ollama",
        "Ollama",
        "http://localhost:11434/v1",
        None,
        _capabilities(),
        key_placeholder="ollama",
        description="a local Ollama server (no key needed)",
    ),
    Preset(
        "vllm",
        "vLLM",
        "http://localhost:8000/v1",
        None,
        _capabilities(reasoning=Mode.FORWARDED, audio=Mode.FORWARDED),
        reasoning_field="reasoning_content",
        key_placeholder="EMPTY",
        description="a vLLM OpenAI-compatible server",
    ),
    Preset(
        "lmstudio",
        "LM Studio",
        "http://localhost:1234/v1",
        None,
        _capabilities(),
        key_placeholder="lm-studio",
        description="a local LM Studio server",
    ),
    Preset(
        "openai-compatible",
        "OpenAI-compatible",
        None,
        None,
        _capabilities(reasoning=Mode.FORWARDED, audio=Mode.FORWARDED, output_modes=TOOL),
        reasoning_field="reasoning_content",
        key_placeholder="EMPTY",
        description="any OpenAI-compatible server (base_url required)",
    ),
)

_BY_NAME = {p.name: p for p in PRESETS}


def preset(name: str) -> Preset:
    """The preset registered as ``name``."""
    return _BY_NAME[name]
