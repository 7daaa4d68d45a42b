"""What a provider or backend can carry, declared by its plugin and checked by the core.

Every request is checked against its provider's ``Capabilities`` before any I/O; a block the
provider cannot carry raises ``UnsupportedContentBlockError``. Nothing is dropped silently,
except hints (``CachePoint``): they are not content, so a provider that does not declare
``caching`` never sees them (``Capabilities.outgoing``) and nothing refuses them.
"""

from __future__ import annotations

import enum
import fnmatch
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .errors import MediaTooLargeError, OptionTypeError, UnsupportedContentBlockError, UsageError
from .media import decoded_size
from .messages import (
    HINT_CLASSES,
    AudioBlock,
    Base64Source,
    DocumentBlock,
    FilePart,
    ImageBlock,
    LLMMessage,
    MediaSource,
    ToolResultBlock,
    UrlSource,
    VideoBlock,
    strip_hints,
)

if TYPE_CHECKING:
    from .backends import Backend
    from .providers import Provider, ProviderSettings

__all__ = [
    "CACHE_PLACES",
    "IN_TOOL_RESULT",
    "BackendSpec",
    "BlockSupport",
    "CacheSupport",
    "Capabilities",
    "MediaLimit",
    "Mode",
    "ModelRules",
    "OptionSpec",
    "OptionSpecs",
    "ProviderSpec",
    "UnsupportedSettingError",
    "cache_ttl",
]

#: The pseudo-role of a part inside a tool result (an image or a file a tool returned).
IN_TOOL_RESULT = "tool_result"


class Mode(enum.Enum):
    """How a provider carries a block: mapped to its own wire shape, or passed on for the
    service to accept or refuse (OpenAI-compatible services receiving video)."""

    NATIVE = "native"
    FORWARDED = "forwarded"


@attrs.frozen
class BlockSupport:
    """One supported block type in some roles.

    ``block_type`` is a block's ``type`` ("text", "image", "video", "document", "audio",
    "tool_use", "tool_result", "reasoning") or, with ``roles={IN_TOOL_RESULT}``, a
    tool-result part ("image", "file").
    ``sources`` and ``media_types`` restrict media blocks (``None``: any media type of the
    block's family); ``sources=frozenset({"url"})`` declares a URL-only provider.
    ``url_check``, for a service that reads only some URLs (Gemini: https URLs only),
    takes a URL and returns None when the service can read it, or the reason it cannot, which
    becomes the refusal's detail.
    """

    block_type: str
    roles: frozenset[str] = frozenset({"user", "assistant"})
    sources: frozenset[str] = frozenset({"base64", "url"})
    media_types: frozenset[str] | None = None
    mode: Mode = Mode.NATIVE
    url_check: Callable[[str], str | None] | None = None


#: How a size is counted: the file's own bytes, or the base64 characters put on the wire.
_MEASURES = ("decoded", "base64")
_SCOPES = ("block", "request")


def _frozen_types(value: Iterable[str]) -> frozenset[str]:
    return frozenset((value,) if isinstance(value, str) else value)


@attrs.frozen
class MediaLimit:
    """A documented size limit on inline (base64) media, checked before any request.

    ``scope`` "block": each block of ``block_types`` may hold at most ``max_bytes``;
    "request": all of them in one request together. ``measure`` says what is counted:
    "decoded" (the file's bytes; most providers document that) or "base64" (the characters
    sent, for a provider that caps the encoded payload or the request body). Both are
    computed from the base64 length, never by decoding. ``option`` names a
    ``provider_options`` key that replaces ``max_bytes`` (a plugin's own, e.g. Gemini's
    ``inline_limit``). ``name`` is how the refusal calls the limit ("inline limit") and
    ``hint`` the way out it offers (default: send the media by URL, or smaller). URL sources
    are not counted: their size is not known before the service fetches them.
    """

    max_bytes: int
    block_types: frozenset[str] = attrs.field(
        default=frozenset({"image", "video", "document", "audio", "file"}),
        converter=_frozen_types,
    )
    scope: str = attrs.field(default="block", validator=attrs.validators.in_(_SCOPES))
    measure: str = attrs.field(default="decoded", validator=attrs.validators.in_(_MEASURES))
    option: str | None = None
    name: str = "limit"
    hint: str = "send it by URL or make it smaller"

    def size_of(self, source: Base64Source) -> int:
        """``source``'s size as this limit counts it."""
        return len(source.data) if self.measure == "base64" else decoded_size(source)

    def describe(self) -> str:
        """``limit of 5242880 bytes of base64 per image``: the limit as refusals name it."""
        what = "/".join(sorted(self.block_types))
        per = f"per {what}" if self.scope == "block" else f"per request, {what} together"
        counted = "" if self.measure == "decoded" else " of base64"
        return f"{self.name} of {self.max_bytes} bytes{counted} {per}"


class UnsupportedSettingError(UsageError):
    """A model cannot take a setting (``AgentConfig.thinking``, or a sampling setting whose
    absence would change the answer's meaning); raised locally, before any request is sent.

    ``provider`` names the provider, ``model`` the model (None: the provider's default),
    ``setting`` the setting ("thinking", "max_tokens"...) and ``value`` what was asked.
    """

    code = "UNSUPPORTED_SETTING"

    def __init__(
        self, provider: str, setting: str, value: object, reason: str, *, model: str | None = None
    ) -> None:
        self.provider = provider
        self.setting = setting
        self.value = value
        self.model = model
        self.reason = reason
        on = f" for model {model}" if model else ""
        super().__init__(f"{provider} cannot take {setting}={value!r}{on}: {reason}")


#: How a model family thinks: it cannot ("never"), it may or may not ("optional"), or it
#: always does and cannot be told not to ("always").
THINKING_KINDS = ("never", "optional", "always")
#: Sampling settings a model may refuse (``ModelRules.refuses``): the portable ``temperature``
#: and ``stop``, and the services' own ``top_p`` and ``top_k`` when given as options.
SAMPLING_SETTINGS = ("temperature", "top_p", "top_k", "stop")


def _name_set(value: Iterable[str]) -> frozenset[str]:
    return frozenset((value,) if isinstance(value, str) else value)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class ModelRules:
    """What one family of a provider's models accepts, from the service's documentation.

    ``models`` are glob patterns (``fnmatch``, case-sensitive) matched against the model id;
    a provider's ``Capabilities.models`` is read in order and the first family that matches
    applies (a model no family matches is sent as asked, for the service to judge).
    ``thinking`` says how the family thinks (``THINKING_KINDS``): ``AgentConfig.thinking``
    other than "off" is refused before any request for "never", and "off" for "always".
    ``budget`` False: the family takes a level, not a token budget (a budget is refused).
    ``refuses``: settings the family does not take at all; ``refuses_while_thinking``: those
    it does not take while it thinks; ``exclusive``: settings of which it takes one (the first
    given, in this order). A provider leaves such a setting out with a one-line note
    (``leave_out``). ``source`` names the documentation the rule follows.
    """

    models: tuple[str, ...] = attrs.field(converter=_names)
    thinking: str = attrs.field(default="optional", validator=attrs.validators.in_(THINKING_KINDS))
    budget: bool = True
    refuses: frozenset[str] = attrs.field(default=frozenset(), converter=_name_set)
    refuses_while_thinking: frozenset[str] = attrs.field(default=frozenset(), converter=_name_set)
    exclusive: tuple[str, ...] = attrs.field(default=(), converter=_names)
    source: str = ""

    def matches(self, model: str) -> bool:
        """Whether ``model`` belongs to this family."""
        return any(fnmatch.fnmatchcase(model, pattern) for pattern in self.models)

    def refused(self, given: Iterable[str], *, thinking: bool) -> list[str]:
        """Of the settings ``given`` (names, in the order they are written), those this family
        does not take: refused outright, refused while ``thinking``, or past the first of an
        ``exclusive`` group."""
        given = list(given)
        refused = [name for name in given if name in self.refuses]
        if thinking:
            refused += [n for n in given if n in self.refuses_while_thinking and n not in refused]
        kept = [n for n in self.exclusive if n in given and n not in refused]
        refused += kept[1:]
        return refused

    def leave_out(
        self,
        body: dict[str, Any],
        names: Mapping[str, str],
        *,
        thinking: bool,
        model: str,
        logger: logging.Logger,
    ) -> list[str]:
        """Remove from ``body`` the settings this family does not take, logging one line each
        at WARNING on ``logger``; returns the settings left out.

        ``names`` maps a setting's portable name ("temperature", "stop") to its key in
        ``body`` ("stop_sequences"); a setting absent from ``body`` is not counted.
        """
        present = [name for name, key in names.items() if key in body]
        left_out = self.refused(present, thinking=thinking)
        for name in left_out:
            del body[names[name]]
            logger.warning("%s: %s left out: %s", model, name, self._why(name, thinking))
        return left_out

    def _why(self, name: str, thinking: bool) -> str:
        if name in self.refuses:
            return "the model does not take it"
        if thinking and name in self.refuses_while_thinking:
            return "the model does not take it while it thinks"
        return "the model takes only one of " + ", ".join(self.exclusive)


def _rules_tuple(rules: Iterable[ModelRules]) -> tuple[ModelRules, ...]:
    return tuple(rules)


def _output_modes(modes: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(modes)
    unknown = chosen - {"native", "tool", "prompted"}
    if unknown or not chosen:
        raise ValueError(
            'output_modes must be a non-empty set of "native", "tool" and "prompted", got '
            f"{sorted(chosen)!r}"
        )
    return chosen


def _limit_tuple(limits: Iterable[MediaLimit]) -> tuple[MediaLimit, ...]:
    return tuple(limits)


#: Where a provider may place cache markers, in the order a request is cached.
CACHE_PLACES = ("tools", "system", "messages")


def _places(value: Iterable[str]) -> frozenset[str]:
    chosen = _name_set(value)
    unknown = chosen - set(CACHE_PLACES)
    if unknown:
        raise ValueError(f"places must be among {', '.join(CACHE_PLACES)}, got {sorted(unknown)}")
    return chosen


def _non_negative(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be an int >= 0, got {value!r}")


@attrs.frozen
class CacheSupport:
    """How a provider caches prompts, from the service's documentation.

    ``max_markers``: the cache markers one request may carry (Anthropic: 4); 0 for a service
    that caches by itself with no marker (``implicit``), to which ``CachePoint`` blocks are
    left out like to a provider without caching. ``places``: where the provider puts markers
    (``CACHE_PLACES``: the tools, the system prompt, the messages), from ``CachePoint`` blocks
    and from ``AgentConfig.cache="auto"``. ``implicit``: the service caches repeated prefixes
    without being asked; either way the tokens it reads and writes are counted in ``Usage``.
    ``source`` names the documentation followed.
    """

    max_markers: int = attrs.field(default=4, validator=_non_negative)
    places: frozenset[str] = attrs.field(default=frozenset(CACHE_PLACES), converter=_places)
    implicit: bool = False
    source: str = ""

    @property
    def markers(self) -> bool:
        """Whether the provider places markers (and so receives ``CachePoint`` blocks)."""
        return self.max_markers > 0 and bool(self.places)


def cache_ttl(options: Mapping[str, Any], provider: str) -> str | None:
    """``provider_options["cache_ttl"]`` checked, for a service whose cache markers take a
    lifetime (Anthropic's ``cache_control``, Bedrock's ``cachePoint``): None for the default
    five minutes ("5m" or not given: no ``ttl`` is sent), "1h" for an hour; anything else is
    an ``OptionTypeError`` naming ``provider`` and the option."""
    value = options.get("cache_ttl")
    if value is None or value == "5m":
        return None
    if value == "1h":
        return "1h"
    raise OptionTypeError(
        f'provider_options["cache_ttl"] for {provider} must be "5m" or "1h", got {value!r}',
        name=provider,
        option="cache_ttl",
        expected='"5m" or "1h"',
        got=repr(value),
    )


@attrs.frozen
class Capabilities:
    """The set of blocks a provider carries, and the documented size limits on inline media;
    everything else is refused before any request."""

    blocks: tuple[BlockSupport, ...]
    limits: tuple[MediaLimit, ...] = attrs.field(default=(), converter=_limit_tuple)
    #: How the provider can be held to an output type: "native" (the service enforces a JSON
    #: schema), "tool" (a forced tool call), "prompted" (instructions, then validation). Every
    #: provider can do "prompted"; a plugin declares the others its wire has.
    output_modes: frozenset[str] = attrs.field(
        default=frozenset({"prompted"}), converter=_output_modes
    )
    #: Whether the provider maps ``AgentConfig.thinking`` to its wire (some of its models can
    #: think). False: any thinking but "off" is refused when a run starts, before any request.
    thinking: bool = False
    #: Per model family, what the provider's models accept (``ModelRules``), first match wins.
    models: tuple[ModelRules, ...] = attrs.field(default=(), converter=_rules_tuple)
    #: How the provider caches prompts (``CacheSupport``); None: it has no caching, and
    #: ``CachePoint`` blocks and ``AgentConfig.cache`` are ignored for it (hints, not content).
    caching: CacheSupport | None = None

    def outgoing(self, messages: Iterable[LLMMessage]) -> tuple[LLMMessage, ...]:
        """``messages`` as this provider receives them: without ``CachePoint`` blocks unless it
        places cache markers (``CacheSupport.markers``). The very messages when nothing is
        left out."""
        messages = messages if isinstance(messages, tuple) else tuple(messages)
        if self.caching is not None and self.caching.markers:
            return messages
        return strip_hints(messages)

    def rules_for(self, model: str | None) -> ModelRules | None:
        """The first family of ``models`` that ``model`` belongs to, or None."""
        if model is None:
            return None
        return next((rules for rules in self.models if rules.matches(model)), None)

    def check_thinking(self, thinking: str | int | None, model: str | None, provider: str) -> None:
        """Raise ``UnsupportedSettingError`` when ``model`` on ``provider`` cannot take
        ``thinking`` (an ``AgentConfig.thinking`` value): the provider maps no thinking, or the
        model's family cannot think, cannot stop thinking, or takes no token budget."""
        if thinking is None or (thinking == "off" and not self.thinking):
            return
        if not self.thinking:
            raise UnsupportedSettingError(
                provider, "thinking", thinking, "the provider has no thinking setting", model=model
            )
        rules = self.rules_for(model)
        if rules is None:
            return
        reason = None
        if rules.thinking == "never" and thinking != "off":
            reason = 'the model cannot think; leave thinking unset or "off"'
        elif rules.thinking == "always" and thinking == "off":
            reason = "the model always thinks; it cannot be turned off"
        elif isinstance(thinking, int) and not rules.budget:
            reason = 'the model takes a level ("low", "medium" or "high"), not a token budget'
        if reason is not None:
            raise UnsupportedSettingError(provider, "thinking", thinking, reason, model=model)

    def find(self, block_type: str, role: str) -> tuple[BlockSupport, ...]:
        return tuple(b for b in self.blocks if b.block_type == block_type and role in b.roles)

    def mode(self, block_type: str, role: str, source: str | None = None) -> Mode | None:
        """The mode this block is carried in, or None when it is refused."""
        for support in self.find(block_type, role):
            if source is None or source in support.sources:
                return support.mode
        return None

    def check(
        self,
        messages: Iterable[LLMMessage],
        provider: str,
        *,
        start: int = 0,
        sizes: bool = True,
    ) -> None:
        """Raise ``UnsupportedContentBlockError`` for the first block ``provider`` cannot carry,
        or ``MediaTooLargeError`` for the first past a size limit.

        ``start`` skips the block checks of messages already checked (a conversation growing
        turn by turn); the size limits always count the whole request. ``sizes=False`` leaves
        the size limits out (``oma render`` warns about them with ``limit_warnings`` instead).
        """
        messages = tuple(messages)
        for message in messages[start:]:
            for block in message.content:
                if isinstance(block, HINT_CLASSES):
                    continue  # a hint, not content: left out where it is not carried
                self._check_block(block.type, message.role, _source_of(block), provider)
                if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
                    for part in block.content:
                        if part.type != "text":
                            self._check_block(part.type, IN_TOOL_RESULT, _source_of(part), provider)
        if sizes and self.limits:
            problems = self._size_problems(messages, provider, first_only=True)
            if problems:
                raise problems[0]

    def limit_warnings(self, messages: Iterable[LLMMessage], provider: str) -> list[str]:
        """Every media size limit ``messages`` break, one line each (for ``oma render``, which
        shows a request it does not send); empty when all fit."""
        return [str(error) for error in self._size_problems(tuple(messages), provider)]

    def with_options(self, options: Mapping[str, Any]) -> Capabilities:
        """These capabilities with each limit's ``option`` applied from ``options`` (an int
        there replaces the limit's ``max_bytes``)."""
        if not any(limit.option and limit.option in options for limit in self.limits):
            return self
        limits: list[MediaLimit] = []
        for limit in self.limits:
            value = options.get(limit.option) if limit.option else None
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                limit = attrs.evolve(limit, max_bytes=value)
            limits.append(limit)
        return attrs.evolve(self, limits=tuple(limits))

    def _size_problems(
        self, messages: tuple[LLMMessage, ...], provider: str, *, first_only: bool = False
    ) -> list[MediaTooLargeError]:
        problems: list[MediaTooLargeError] = []
        totals = [0] * len(self.limits)
        for path, block_type, source in _inline_media(messages):
            for index, limit in enumerate(self.limits):
                if block_type not in limit.block_types:
                    continue
                size = limit.size_of(source)
                if limit.scope == "request":
                    before = totals[index]
                    totals[index] += size
                    if before > limit.max_bytes or totals[index] <= limit.max_bytes:
                        continue  # fits, or already reported where the sum crossed the limit
                    size = totals[index]
                    counted = "" if limit.measure == "decoded" else " of base64"
                    detail = (
                        f"the inline media up to {path} add up to {size} bytes{counted}, past "
                        f"the {limit.describe()}"
                    )
                elif size > limit.max_bytes:
                    counted = "" if limit.measure == "decoded" else " of base64"
                    detail = f"{path} is {size} bytes{counted}, past the {limit.describe()}"
                else:
                    continue
                if limit.option:
                    detail += f' (provider_options["{limit.option}"] sets it)'
                problems.append(
                    MediaTooLargeError(
                        provider,
                        block_type,
                        f"{detail}; {limit.hint}",
                        path=path,
                        size=size,
                        limit=limit.max_bytes,
                        scope=limit.scope,
                        measure=limit.measure,
                    )
                )
                if first_only:
                    return problems
        return problems

    def _check_block(
        self, block_type: str, role: str, source: MediaSource | None, provider: str
    ) -> None:
        supports = self.find(block_type, role)
        where = "inside a tool result" if role == IN_TOOL_RESULT else f"in a {role} message"
        if not supports:
            raise UnsupportedContentBlockError(provider, block_type, f"not supported {where}")
        if source is None:
            return
        kind = "base64" if isinstance(source, Base64Source) else "url"
        by_kind = [s for s in supports if kind in s.sources]
        if not by_kind:
            raise UnsupportedContentBlockError(
                provider, block_type, f"{kind} sources are not supported {where}"
            )
        media_type = source.media_type
        by_type = [s for s in by_kind if s.media_types is None or media_type in s.media_types]
        if not by_type:
            raise UnsupportedContentBlockError(
                provider, block_type, f"media type {source.media_type} is not supported"
            )
        if isinstance(source, UrlSource):
            reasons = [s.url_check(source.url) if s.url_check else None for s in by_type]
            if None not in reasons:
                raise UnsupportedContentBlockError(provider, block_type, reasons[0])

    @classmethod
    def everything(cls) -> Capabilities:
        """Every block in every role it may appear in: for echo and test providers."""
        return cls(
            (
                BlockSupport("text"),
                BlockSupport("image"),
                BlockSupport("video"),
                BlockSupport("document"),
                BlockSupport("audio"),
                BlockSupport("tool_use", frozenset({"assistant"})),
                BlockSupport("tool_result", frozenset({"user"})),
                BlockSupport("reasoning", frozenset({"assistant"})),
                BlockSupport("image", frozenset({IN_TOOL_RESULT})),
                BlockSupport("file", frozenset({IN_TOOL_RESULT})),
            ),
            thinking=True,
        )

    @classmethod
    def text_only(cls) -> Capabilities:
        return cls((BlockSupport("text"),))


def _inline_media(
    messages: tuple[LLMMessage, ...],
) -> Iterable[tuple[str, str, Base64Source]]:
    """``(path, block type, source)`` of every base64 media block and tool-result part."""
    for i, message in enumerate(messages):
        for j, block in enumerate(message.content):
            source = _source_of(block)
            if isinstance(source, Base64Source):
                yield f"messages[{i}].content[{j}]", block.type, source
            if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
                for k, part in enumerate(block.content):
                    source = _source_of(part)
                    if isinstance(source, Base64Source):
                        yield f"messages[{i}].content[{j}].content[{k}]", part.type, source


def _source_of(block: object) -> MediaSource | None:
    if isinstance(block, ImageBlock | VideoBlock | DocumentBlock | AudioBlock | FilePart):
        return block.source
    return None


OptionType = type | tuple[type, ...]


#: The options of the toolkit's HTTP client (``oma_core.http.CLIENT_OPTIONS``), with their
#: types: a provider on that client declares them with ``**CLIENT_OPTION_TYPES``.
CLIENT_OPTION_TYPES: Mapping[Any, type] = {  # Any: it unpacks into any spec dict
    "timeout": float,
    "headers": dict,
    "max_response_bytes": int,
    "max_event_bytes": int,
}


@attrs.frozen
class OptionSpec:
    """One ``provider_options`` name a provider accepts, with its value's type.

    ``type`` is a type or a tuple of types the value must be an instance of; ``object`` (the
    default) accepts any value. ``float`` also accepts an ``int`` (``-o temperature 1``); no
    numeric type accepts a ``bool``. ``help`` is one line for ``oma models --options``.
    """

    name: str
    type: OptionType = object
    help: str = ""

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is of this option's type."""
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        if object in types:
            return True
        if isinstance(value, bool):
            return bool in types
        if float in types and isinstance(value, int):
            return True
        return isinstance(value, types)

    @property
    def type_name(self) -> str:
        """The type as a user reads it: ``float``, ``str or list``, ``any``."""
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        if object in types:
            return "any"
        return " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)


_TYPE_NAMES = {dict: "object", list: "list", str: "str", int: "int", float: "number"}


@attrs.frozen
class OptionSpecs(Mapping[str, OptionSpec]):
    """A provider's declared options by name: an immutable, hashable mapping."""

    specs: tuple[OptionSpec, ...]

    def __getitem__(self, name: str) -> OptionSpec:
        for spec in self.specs:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (spec.name for spec in self.specs)

    def __len__(self) -> int:
        return len(self.specs)


def _option_specs(
    value: Iterable[str | OptionSpec] | Mapping[str, OptionType | OptionSpec] | None,
) -> OptionSpecs | None:
    """``provider_options`` as declared: None (accept every name), names (any type each),
    ``OptionSpec`` values, or a mapping of name to a type or an ``OptionSpec``."""
    if value is None or isinstance(value, OptionSpecs):
        return value
    if isinstance(value, str):
        raise TypeError("provider_options must be a collection of option names, not a str")
    specs: dict[str, OptionSpec] = {}
    if isinstance(value, Mapping):
        for name, kind in value.items():
            specs[name] = kind if isinstance(kind, OptionSpec) else OptionSpec(name, kind)
    else:
        for item in value:
            spec = item if isinstance(item, OptionSpec) else OptionSpec(item)
            specs[spec.name] = spec
    return OptionSpecs(tuple(sorted(specs.values(), key=lambda spec: spec.name)))


def _model_names(value: Iterable[str]) -> tuple[str, ...]:
    """``known_models`` as a tuple of names (a str alone is refused: it would be its letters)."""
    if isinstance(value, str):
        raise TypeError("known_models must be a collection of model names, not a str")
    return tuple(value)


@attrs.frozen
class ProviderSpec:
    """A provider a plugin offers, returned from ``oma_register_providers``.

    ``name`` is what ``AgentConfig.provider`` names; ``display_name`` names the provider in
    errors and in ``oma plugins``; ``capabilities`` is what every request is checked against
    before any I/O. ``factory`` is called on first use with the agent's ``ProviderSettings``;
    it is where the plugin imports its SDK, so that loading plugins imports none.
    ``default_model`` is the model when ``AgentConfig.model`` is None. ``shared`` says one
    instance may serve many runs at once (a stateless SDK client): ``OpenMultiAgent`` then
    keeps one per event loop and settings instead of building a client and connection pool
    for every run.

    ``default_base_url`` is the base URL when ``ProviderSettings.base_url`` is None, and
    ``api_key_env`` names the environment variable (or a tuple of them, in the order they
    are read) the key comes from when ``ProviderSettings.api_key`` is None:
    ``resolution.provider_settings`` fills both in, so a plugin on ``HttpProvider`` repeats
    neither (``oma plugins`` shows both). ``requires_api_key`` says a run cannot start
    without one: the core then raises ``MissingKeyError`` when a run starts with no
    ``AgentConfig.api_key`` and none of those variables set, before any request (a provider
    with another credential chain, such as AWS's, or a local server leaves it False).
    ``provider_options`` declares the ``AgentConfig.provider_options`` it accepts: a mapping
    of name to type (``{"temperature": float}``), ``OptionSpec`` values (a type and a help
    line), or plain names (any type each); it is kept as ``OptionSpecs`` (name ->
    ``OptionSpec``). Options are checked when the agent is built: an unknown name is an
    ``UnknownOptionError`` with a did-you-mean, a value of the wrong type an
    ``OptionTypeError``. None declares nothing and lets every name and value through. A
    provider forwarding fields oma does not know declares an ``extra_body`` object option
    for them, as the OpenAI SDK does.

    ``known_models`` names a few of the service's current model ids, as its models
    documentation gives them (``oma models`` lists them); it is a hint for people, not a
    list runs are checked against: any other model name is sent as given. Empty for a
    provider whose models are whatever its server holds (a local server, a router).
    """

    name: str
    display_name: str
    factory: Callable[[ProviderSettings], Provider]
    capabilities: Capabilities
    description: str = ""
    default_model: str | None = None
    default_base_url: str | None = None
    api_key_env: str | tuple[str, ...] | None = None
    shared: bool = False
    requires_api_key: bool = False
    provider_options: OptionSpecs | None = attrs.field(default=None, converter=_option_specs)
    known_models: tuple[str, ...] = attrs.field(default=(), converter=_model_names)

    @property
    def key_variables(self) -> tuple[str, ...]:
        """``api_key_env`` as a tuple (empty when the provider reads none)."""
        env = self.api_key_env
        if env is None:
            return ()
        return (env,) if isinstance(env, str) else tuple(env)


@attrs.frozen
class BackendSpec:
    """An external agent backend a plugin offers, returned from ``oma_register_backends``.

    ``kind`` is what ``AgentConfig.backend["kind"]`` names. ``factory`` receives the rest of
    that mapping. ``text_only`` backends take string prompts only; the core refuses
    structured input for them before anything starts.
    """

    kind: str
    display_name: str
    factory: Callable[[Mapping[str, Any]], Backend]
    text_only: bool = True
    description: str = ""
