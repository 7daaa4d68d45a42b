"""An agent's output type: its JSON schema, the instructions that ask a model for it, and the
check of a reply's text against it.

One output type, three ways a provider can be held to it (``Capabilities.output_modes``):
``native`` (the service enforces the schema), ``tool`` (a forced tool call whose arguments are
the output) and ``prompted`` (the schema in the system prompt, the reply checked here). This
module is the part every mode shares: ``output_spec`` turns an ``output_type`` into an
``OutputSpec`` (refusing, with ``OutputTypeError``, a type that cannot become a JSON schema);
``OutputSpec.validate_text`` parses a reply (bare JSON, or a fenced ```json block; strict JSON,
nested at most ``MAX_OUTPUT_DEPTH`` levels) and checks it, raising ``OutputInvalid`` with the
errors a corrective turn carries back to the model. ``PartialText`` reads a streamed reply as
it arrives, at a cost bounded by a small multiple of its size.

Types reuse the tools' schema and structuring code (``_tool_types``: one cattrs converter, and
pydantic's own validation for pydantic models). A JSON Schema dict is checked with the subset of
JSON Schema tools use (``type``, ``enum``, ``anyOf``, ``properties``, ``required``,
``additionalProperties``, ``items``); a dict schema using a keyword outside that subset that
would constrain values (``minimum``, ``pattern``, ``$ref``...) is refused when the config is
built rather than silently not enforced.
"""

from __future__ import annotations

import functools
import json
import math
import re
import typing
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from ._checks import DEFAULT_LIMITS
from ._tool_types import check, is_json, schema_for, structure, unstructure
from .errors import OutputTypeError
from .providers import OutputRequest, ToolCallDelta

__all__ = [
    "OUTPUT_MODES",
    "MAX_OUTPUT_DEPTH",
    "OUTPUT_TOOL_NAME",
    "OutputInvalid",
    "OutputMode",
    "OutputSpec",
    "PartialText",
    "StreamedOutputCall",
    "choose_mode",
    "extract_json",
    "output_json",
    "output_spec",
    "partial_json",
]

OutputMode: TypeAlias = Literal["native", "tool", "prompted"]
OUTPUT_MODES: frozenset[str] = frozenset({"native", "tool", "prompted"})
#: The order a mode is picked in when the run does not name one: the service's own
#: enforcement first, then a forced tool call, then instructions.
_PREFERENCE: tuple[OutputMode, ...] = ("native", "tool", "prompted")
#: The name of the output tool in tool mode (pydantic-ai's name for it: models know it).
OUTPUT_TOOL_NAME = "final_result"
#: The property a non-object output is wrapped in on the wire (services want an object root).
_WRAPPER = "response"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

#: JSON Schema keywords a dict schema may use: the ones checked, and annotations.
_CHECKED = frozenset(
    {"type", "enum", "anyOf", "properties", "required", "additionalProperties", "items"}
)
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$schema", "$comment", "format"}
)
_TYPE_NAMES = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})

#: Stop reasons after which a reply is not a whole answer: never parsed as output.
_CUT_OR_REFUSED = frozenset(
    # "model_length": Mistral's cut-off reply, passed through by oma-mistral
    {"max_tokens", "length", "model_length", "refusal", "content_filter", "safety", "recitation"}
)


class OutputInvalid(ValueError):
    """A reply that is not the output asked for; ``errors`` say where and why, one line
    each (they go back to the model in the corrective turn)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


@attrs.frozen
class OutputSpec:
    """An output type made ready for a run: ``output_type`` as given, its JSON ``schema``,
    and ``name`` (the type's name, or the schema's title)."""

    output_type: Any = attrs.field(eq=False)
    schema: dict[str, Any]
    name: str
    #: What the system prompt says in prompted mode (made once: every model call sends it).
    instructions: str = attrs.field(init=False, eq=False, repr=False)

    #: Whether some object of the schema has an optional property (only then can a strict
    #: service's null stand for an absent one: ``validate_wire`` looks for them).
    has_optional: bool = attrs.field(init=False, eq=False, repr=False)
    #: The ``OutputRequest`` of each mode, made on first use (every call of a run sends it).
    _requests: dict[str, OutputRequest] = attrs.field(
        init=False, eq=False, repr=False, factory=dict
    )

    @has_optional.default
    def _has_optional(self) -> bool:
        return _optional_somewhere(self.schema)

    @instructions.default
    def _instructions(self) -> str:
        schema = json.dumps(self.schema, separators=(",", ":"), sort_keys=True)
        return (
            "Your final answer must be a single JSON value that matches this JSON Schema, and "
            "nothing else: no prose before or after it (a ```json fenced block is accepted).\n"
            f"JSON Schema: {schema}"
        )

    @property
    def wrapped(self) -> bool:
        """The output is not a JSON object: on the wire (native and tool modes) it travels as
        the ``response`` property of one, since services want an object at the root."""
        return self.schema.get("type") != "object"

    @property
    def wire_schema(self) -> dict[str, Any]:
        """The schema a provider is given in native and tool modes (always an object)."""
        if not self.wrapped:
            return self.schema
        return {
            "type": "object",
            "properties": {_WRAPPER: self.schema},
            "required": [_WRAPPER],
            "additionalProperties": False,
        }

    def request(self, mode: Literal["native", "tool"]) -> OutputRequest:
        """The ``ProviderRequest.output`` of a call in ``mode``: the wire schema under a name
        every service takes (the output tool's name in tool mode)."""
        made = self._requests.get(mode)
        if made is None:
            made = self._requests[mode] = self._request(mode)
        return made

    def _request(self, mode: Literal["native", "tool"]) -> OutputRequest:
        if mode == "tool":
            name = OUTPUT_TOOL_NAME
            description = (
                "Give your final answer by calling this tool: its arguments are the answer."
            )
        else:
            name = _NAME_CHARS.sub("_", self.name)[:64] or "output"
            description = None
        described = self.schema.get("description")
        if isinstance(described, str) and described:
            description = described if description is None else f"{description} {described}"
        return OutputRequest(self.wire_schema, name, mode, description)

    def validate_wire(self, value: Any) -> Any:
        """A value a provider held to ``wire_schema`` produced (native JSON text parsed, or a
        tool call's arguments), unwrapped and checked. A ``null`` for an optional property
        whose schema does not take null is read as absent: strict services make every
        property required and the optional ones nullable."""
        if self.wrapped:
            if not isinstance(value, Mapping) or _WRAPPER not in value:
                raise OutputInvalid([f"$ must be an object with the property {_WRAPPER!r}"])
            value = value[_WRAPPER]
        if self.has_optional:
            value = _without_optional_nulls(self.schema, value)
        return self.validate(value)

    def validate_native(self, text: str) -> Any:
        """The output in a native-mode reply's text (the service's JSON), checked."""
        try:
            value = extract_json(text)
        except ValueError as error:
            raise OutputInvalid([str(error)]) from None
        return self.validate_wire(value)

    def wire_partial(self, value: Any) -> Any:
        """A partial wire value as the caller sees it (unwrapped; None until it starts)."""
        if self.wrapped:
            return value.get(_WRAPPER) if isinstance(value, Mapping) else None
        return value

    @property
    def is_schema(self) -> bool:
        """A JSON Schema dict was given: the output is the checked JSON value itself."""
        return isinstance(self.output_type, Mapping)

    def validate_text(self, text: str) -> Any:
        """The output in ``text``, checked; ``OutputInvalid`` when there is none."""
        try:
            value = extract_json(text)
        except ValueError as error:
            raise OutputInvalid([str(error)]) from None
        return self.validate(value)

    def validate(self, value: Any) -> Any:
        """``value`` (parsed JSON) checked against the schema and made the output type."""
        problem = check(self.schema, value, "$")
        if problem is not None:  # the tools' check, in the words of an output
            raise OutputInvalid([problem.replace(" argument ", " property ")])
        if self.is_schema:
            return value
        try:
            return structure(value, self.output_type, "$")
        except ValueError as error:
            raise OutputInvalid([str(error)]) from None

    def tool_correction(self, errors: list[str]) -> str:
        """The error result that answers an output tool call whose arguments did not
        validate (tool mode's corrective turn)."""
        listed = "\n".join(f"- {error}" for error in errors)
        return (
            "These arguments are not valid output for the required JSON Schema:\n"
            f"{listed}\n"
            f"Call {OUTPUT_TOOL_NAME} again with corrected arguments."
        )

    def corrective_prompt(self, errors: list[str]) -> str:
        """The user turn that asks the model to fix a reply that failed ``validate_text``."""
        listed = "\n".join(f"- {error}" for error in errors)
        return (
            "Your reply is not valid output for the required JSON Schema:\n"
            f"{listed}\n"
            "Reply again with only the corrected JSON value."
        )


def choose_mode(declared: frozenset[str], wanted: str | None, provider: str) -> OutputMode:
    """The output mode of a run: ``wanted`` if the provider declares it (``OutputTypeError``
    if not), else the first of native, tool, prompted that it declares."""
    if wanted is not None:
        if wanted not in declared and wanted != "prompted":
            raise OutputTypeError(
                f'in output_mode "{wanted}"',
                f"{provider} declares output modes {', '.join(sorted(declared))}; choose one "
                "of them, or leave output_mode unset to take the best",
            )
        return typing.cast(OutputMode, wanted)
    for mode in _PREFERENCE:
        if mode in declared:
            return mode
    return "prompted"


def _optional_somewhere(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_optional_somewhere(item) for item in schema)
    if not isinstance(schema, Mapping):
        return False
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and set(properties) - set(schema.get("required") or ()):
        return True
    return any(_optional_somewhere(value) for value in schema.values())


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    return any(_allows_null(option) for option in schema.get("anyOf") or ())


def _without_optional_nulls(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` without the nulls a strict service put in optional properties that do not
    take null (so the property's default applies), recursively through objects and lists."""
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return value
        required = set(schema.get("required") or ())
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            if item is None and key not in required and sub is not None and not _allows_null(sub):
                continue
            out[key] = _without_optional_nulls(sub, item) if isinstance(sub, Mapping) else item
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_without_optional_nulls(items, item) for item in value]
    return value


def output_json(value: Any) -> str:
    """A structured output (an instance of its output type, or plain JSON data) as JSON text,
    e.g. for a dependent task's prompt."""
    return json.dumps(unstructure(value), ensure_ascii=False, default=str)


def stopped_short(stop_reason: str | None) -> bool:
    """Whether a reply that stopped for ``stop_reason`` was cut or withheld (never output)."""
    return stop_reason is not None and stop_reason.lower() in _CUT_OR_REFUSED


def output_spec(output_type: Any) -> OutputSpec | None:
    """``output_type`` as an ``OutputSpec`` (None for None); ``OutputTypeError`` for one
    that cannot become a JSON schema, naming the type and why."""
    if output_type is None:
        return None
    if isinstance(output_type, Mapping):
        if not is_json(output_type):
            raise OutputTypeError(
                "JSON Schema dict", "it is not JSON (only JSON values may appear)"
            )
        # Made once per distinct schema (its JSON text is the key): runs reuse it.
        return _schema_spec(json.dumps(output_type, sort_keys=True))
    try:
        return _type_spec(output_type)
    except TypeError:  # unhashable: not a type (a list instance, ...)
        return _build_type_spec(output_type)


@functools.lru_cache(maxsize=256)
def _type_spec(output_type: Any) -> OutputSpec:
    return _build_type_spec(output_type)


def _build_type_spec(output_type: Any) -> OutputSpec:
    name = _type_name(output_type)
    function = callable(output_type) and not isinstance(output_type, type)
    if function and not _is_generic(output_type):
        raise OutputTypeError(
            name, "a function is not a type; give a class, a list[...] type or a JSON Schema dict"
        )
    try:
        schema = schema_for(output_type)
    except (TypeError, NameError) as error:
        raise OutputTypeError(name, str(error)) from None
    open_at = _open_place(schema, "$")
    if open_at is not None:
        raise OutputTypeError(
            name,
            f"{open_at} can be any value (Any, or an open dict): give it a type the model can be "
            "held to",
        )
    return OutputSpec(output_type, schema, getattr(output_type, "__name__", name))


def _is_generic(value: Any) -> bool:
    return typing.get_origin(value) is not None


def _type_name(value: Any) -> str:
    if _is_generic(value):
        return repr(value)
    if isinstance(value, type):
        return value.__qualname__
    name = getattr(value, "__qualname__", None)
    return name if isinstance(name, str) else repr(value)


def _open_place(schema: Mapping[str, Any], path: str) -> str | None:
    """The first place of ``schema`` that allows any value, or None."""
    if not schema or (set(schema) <= {"description", "title", "default"}):
        return path
    extra = schema.get("additionalProperties")
    open_extra = extra is None or extra is True or (isinstance(extra, Mapping) and not extra)
    if schema.get("type") == "object" and not schema.get("properties") and open_extra:
        return path
    for key, sub in (schema.get("properties") or {}).items():
        found = _open_place(sub, f"{path}.{key}")
        if found:
            return found
    if isinstance(extra, Mapping):
        found = _open_place(extra, f"{path}.*")
        if found:
            return found
    items = schema.get("items")
    if isinstance(items, Mapping):
        found = _open_place(items, f"{path}[]")
        if found:
            return found
    for option in schema.get("anyOf") or ():
        found = _open_place(option, path)
        if found:
            return found
    return None


@functools.lru_cache(maxsize=256)
def _schema_spec(text: str) -> OutputSpec:
    """The spec of a JSON Schema dict (given as its JSON text), refused if it uses a keyword
    outside the checked subset. Its ``output_type`` is a private copy: the caller's dict may
    change later without changing a run."""
    schema: dict[str, Any] = json.loads(text)
    _check_schema_node(schema, "$")
    title = schema.get("title")
    return OutputSpec(json.loads(text), schema, title if isinstance(title, str) else "output")


def _check_schema_node(node: Any, path: str) -> None:
    def refuse(reason: str) -> typing.NoReturn:
        raise OutputTypeError("JSON Schema dict", f"{path}: {reason}")

    if not isinstance(node, dict):
        refuse("a schema must be an object")
    for key in node:
        if key not in _CHECKED and key not in _ANNOTATIONS:
            refuse(
                f"keyword {key!r} is not supported (oma checks type, enum, anyOf, properties, "
                "required, additionalProperties and items)"
            )
    kind = node.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else kind
        if not isinstance(names, list) or not names or not set(names) <= _TYPE_NAMES:
            refuse(f"type must be one of {', '.join(sorted(_TYPE_NAMES))}, got {kind!r}")
    if "enum" in node and (not isinstance(node["enum"], list) or not node["enum"]):
        refuse("enum must be a non-empty list")
    properties = node.get("properties", {})
    if not isinstance(properties, dict):
        refuse("properties must be an object")
    for key, sub in properties.items():
        _check_schema_node(sub, f"{path}.properties.{key}")
    required = node.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        refuse("required must be a list of strings")
    extra = node.get("additionalProperties")
    if extra is not None and not isinstance(extra, bool):
        _check_schema_node(extra, f"{path}.additionalProperties")
    if "items" in node:
        _check_schema_node(node["items"], f"{path}.items")
    options = node.get("anyOf")
    if options is not None:
        if not isinstance(options, list) or not options:
            refuse("anyOf must be a non-empty list")
        for index, option in enumerate(options):
            _check_schema_node(option, f"{path}.anyOf[{index}]")


# -- finding the JSON in a reply ---------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value a reply carries: the whole text, else the first fenced block (```json
    or bare ```), else the span from the first ``{``/``[`` to the last ``}``/``]``.
    ``ValueError`` saying what was wrong when none parses, and when the value is not JSON
    at all (``NaN``, ``Infinity``, a number too large for a float) or nests more than
    ``MAX_OUTPUT_DEPTH`` levels."""
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply is empty: expected a JSON value")
    try:
        return _loads(stripped)
    except _NotJSON:
        raise
    except ValueError:
        pass
    for match in _FENCE.finditer(text):
        try:
            return _loads(match.group(1))
        except _NotJSON:
            raise
        except ValueError as error:
            raise ValueError(f"the fenced JSON block does not parse: {error}") from None
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    end = max(stripped.rfind("}"), stripped.rfind("]"))
    if starts and end > min(starts):
        try:
            return _loads(stripped[min(starts) : end + 1])
        except _NotJSON:
            raise
        except ValueError as error:
            raise ValueError(f"the reply's JSON does not parse: {error}") from None
    raise ValueError("the reply holds no JSON value")


#: How deeply an output value may nest (the value itself is level 1): the limit of a tool
#: call's arguments (``ValidationLimits.max_depth``), so every mode holds output to the same.
MAX_OUTPUT_DEPTH: Final = DEFAULT_LIMITS.max_depth
_TOO_DEEP = (
    f"the reply's JSON nests more than {MAX_OUTPUT_DEPTH} levels deep (the limit of an "
    "output value): give a flatter value"
)


class _NotJSON(ValueError):
    """Text that parses only as more than JSON: Python's ``NaN``/``Infinity``, a number past
    a float's range, or a value nested past the limit. Never retried on another span."""


def _not_a_number(name: str) -> Any:
    raise _NotJSON(
        f"the reply's JSON holds {name}, which is not a JSON number: give a finite number "
        "(or null, if the schema allows it)"
    )


_TOO_LARGE = "the reply's JSON holds a number too large for a float: give a smaller number"
#: One decoder, made once (``json.loads`` with a hook would make one per call).
_DECODER = json.JSONDecoder(parse_constant=_not_a_number)


def _loads(text: str) -> Any:
    """``text`` parsed as strict JSON (see ``_NotJSON``): ``ValueError`` otherwise."""
    try:
        value = _DECODER.decode(text)
    except RecursionError:  # the decoder's own limit, met long past ours
        raise _NotJSON(_TOO_DEEP) from None
    kind = type(value)
    if kind is dict or kind is list:
        _check_tree(value)
    elif kind is float and not math.isfinite(value):
        raise _NotJSON(_TOO_LARGE)
    return value


def _check_tree(value: dict[str, Any] | list[Any]) -> None:
    """Refuse a parsed value nested past ``MAX_OUTPUT_DEPTH`` or holding a number that
    overflowed to infinity (``1e400``): walked with an explicit stack, so no depth raises
    ``RecursionError``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_OUTPUT_DEPTH:
            raise _NotJSON(_TOO_DEEP)
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is float and not math.isfinite(child):
                raise _NotJSON(_TOO_LARGE)


def partial_json(text: str) -> Any:
    """The JSON value so far in a reply still arriving (None before one starts): parsed with
    ``jiter``'s partial mode, so an unfinished string, list or object comes back as far as it
    got. A fence opening (```json) before the value is skipped."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    body = text[min(starts) :]
    # A closing fence begins a line; a JSON string cannot hold a raw newline, so "```" after
    # one is never inside a string (a key or value of "```" is JSON like any other).
    fence = _CLOSING_FENCE.search(body)
    if fence is not None:
        body = body[: fence.start()]
    import jiter

    try:
        return jiter.from_json(body.encode(), partial_mode="trailing-strings")
    except ValueError:
        cut = body.rfind("```")  # a fence closing on the value's own line
        if cut < 0:
            return None
        try:
            return jiter.from_json(body[:cut].encode(), partial_mode="trailing-strings")
        except ValueError:
            return None


_CLOSING_FENCE = re.compile(r"\r?\n[ \t]*```")


class PartialText:
    """A reply's text as its pieces arrive, read as the JSON value so far (``partial_json``).

    Reading is throttled by size, never by time: the text is read again only once it has
    grown by an eighth of what it was at the last read (by one character while that is
    less), and ``flush`` reads what came after. So a reply of n characters is read about
    9n characters in all, however small its pieces (read at every piece it would be n²/2
    over piece size), while a short reply is still read at nearly every piece. Nothing here
    can fail a run: text that does not parse shows nothing.
    """

    __slots__ = ("_pieces", "_read_at", "_size", "_text", "read_chars")

    def __init__(self) -> None:
        self._text = ""  # the text up to the last read
        self._pieces: list[str] = []  # the pieces since (joined only when read)
        self._size = 0
        self._read_at = 0  # the size at the last read
        #: How many characters were parsed in all (the work done: the tests bound it).
        self.read_chars = 0

    def feed(self, piece: str) -> Any:
        """The value so far with ``piece`` added, or None: not read this time (it has not
        grown enough), or it shows nothing yet."""
        if not piece:
            return None
        self._pieces.append(piece)
        self._size += len(piece)
        if self._size - self._read_at < max(1, self._read_at >> 3):
            return None
        return self._read()

    def flush(self) -> Any:
        """The value of the whole text, if some of it was not read yet; None otherwise."""
        return None if self._size == self._read_at else self._read()

    def _read(self) -> Any:
        self._text += "".join(self._pieces)
        self._pieces.clear()
        self._read_at = self._size
        self.read_chars += self._size
        return partial_json(self._text)


class StreamedOutputCall:
    """Tool mode, streaming: the output tool call's arguments as their pieces arrive
    (``ToolCallDelta`` events), read leniently (and throttled: ``PartialText``) as the
    output so far.

    Only the first call of the output tool is followed (the one the run reads); pieces of
    other calls are ignored. A call is known by the name on its first piece (the contract of
    ``ToolCallDelta``). Nothing here can fail a run: pieces that do not parse show nothing,
    and the output is read, strictly, from the whole ``ToolCall`` alone (which the run shows
    last, so the throttled reading never hides the end).
    """

    __slots__ = ("_index", "_name", "_spec", "text")

    def __init__(self, spec: OutputSpec, name: str) -> None:
        self._spec = spec
        self._name = name
        self._index: int | None = None
        #: The arguments' text so far.
        self.text = PartialText()

    def feed(self, delta: ToolCallDelta) -> Any:
        """The output so far (unwrapped) with ``delta`` added; None while it shows nothing
        (or is not read this time)."""
        if self._index is None:
            if delta.name != self._name:
                return None
            self._index = delta.index
        elif delta.index != self._index:
            return None
        piece = delta.arguments
        if not piece or type(piece) is not str:  # a provider's bug shows nothing, fails nothing
            return None
        value = self.text.feed(piece)
        return None if value is None else self._spec.wire_partial(value)
