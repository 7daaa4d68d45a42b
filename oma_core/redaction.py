"""Scrub secrets and media out of text and JSON before it is stored, traced, logged or reported.

Used for evaluation payloads (``store_payloads="redacted"``), span attributes, log records and
the text of errors put in results. What goes:

- credentials by shape: ``sk-...`` / ``sk-ant-...`` keys, ``Bearer ...`` tokens, JWTs, AWS
  access key ids (``AKIA...``/``ASIA...``), Google (``AIza...``) and GitHub (``ghp_...``) tokens,
  and ``api_key=...``-style assignments;
- values stored under a secret-looking key (``api_key``, ``token``, ``password``, ...);
- URL user info and query strings (where signed URLs keep their signatures);
- long base64-like runs (16 or more characters of the base64 alphabet that are not a plain
  lowercase word, path or hex digest), so no piece of an inline image survives in text;
- every media payload in a message: it becomes ``{"media_type", "bytes", "sha256"}`` of the
  decoded bytes, so a payload can still be matched without being kept.

Redaction is best effort by design: it removes what looks like a secret, it cannot know
every secret. ``store_payloads="none"`` is the setting that keeps no content at all.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import hashlib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "JWT_SHAPE",
    "REDACTED",
    "VENDOR_TOKEN_SHAPES",
    "cut",
    "detached_error",
    "redact_error",
    "redact_json",
    "redact_text",
    "redact_url",
]

REDACTED = "[REDACTED]"

#: Where payloads are cut (characters), and what is appended when they are.
DEFAULT_LIMIT = 8192

# Key names whose values are secrets; "max_tokens", "input_tokens" and "author" are not.
_SECRET_KEY = re.compile(
    r"(?i)(api[-_]?key|apikey|secret|token(?!s|iz|_count|_usage)|password|passwd|pwd|"
    r"authorization|auth(?!or)|credential|private[-_]?key|access[-_]?key|session[-_]?id|"
    r"cookie|signature)"
)

#: A JSON Web Token's shape (``eyJ...``, three dot-separated parts): scrubbed by
#: ``redact_text``, and reused by ``oma_core.processes.redact`` for a child's stderr.
JWT_SHAPE = re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")
#: The shapes of tokens with a vendor's prefix (AWS key ids, Google, GitHub, Slack): scrubbed
#: by ``redact_text``, and reused by ``oma_core.processes.redact``.
VENDOR_TOKEN_SHAPES: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
)

# Ordered: the more specific shapes first.
_SHAPES: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(?i)\bbasic\s+[A-Za-z0-9+/=]{8,}"),
    JWT_SHAPE,
    *VENDOR_TOKEN_SHAPES,
)

# key = value / key: value in free text (headers, query strings, env dumps).
_ASSIGNMENT = re.compile(
    r"(?i)\b((?:x-)?(?:api[-_]?key|apikey|secret|token|password|passwd|access[-_]?key"
    r"(?:[-_]?id)?|secret[-_]?access[-_]?key|client[-_]?secret|auth[-_]?token)"
    r"[\"']?\s*[:=]\s*[\"']?)([^\s\"',;&]+)"
)

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>\\]+")
_DATA_URL = re.compile(r"data:[A-Za-z0-9.+\-]+/[A-Za-z0-9.+\-]+;base64,[A-Za-z0-9+/=]+")
_B64_RUN = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_PLAIN_RUN = re.compile(r"[a-z0-9/]*[a-z][a-z0-9/]*")
# CamelCase words, such as UnsupportedContentBlockError or ScriptedProvider, are names, not
# data: a payload is matched as one whole run, which almost surely breaks this shape.
_CAMEL_RUN = re.compile(r"(?:[A-Z][a-z]+)+")


def redact_url(url: str) -> str:
    """``url`` without user info, query string or fragment (a signed URL loses its signature).

    The host is lowercased (as ``urlsplit`` reports it); the path is kept.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return REDACTED
    if not parts.netloc:
        return url
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _b64_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if _PLAIN_RUN.fullmatch(run) or _CAMEL_RUN.fullmatch(run):  # words, paths, hex digests
        return run
    return f"[base64-like data omitted; {len(run)} characters]"


def redact_text(text: str) -> str:
    """``text`` with credentials, URL secrets and base64-like runs replaced."""
    if not text:
        return text
    text = _DATA_URL.sub(lambda m: f"[data URL omitted; {len(m.group(0))} characters]", text)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    for shape in _SHAPES:
        text = shape.sub(REDACTED, text)
    text = _ASSIGNMENT.sub(lambda m: m.group(1) + REDACTED, text)
    return _B64_RUN.sub(_b64_run, text)


def _media_digest(source: Mapping[str, Any]) -> dict[str, Any]:
    data = source.get("data")
    raw: bytes
    if isinstance(data, str):
        try:
            raw = base64.b64decode(data + "=" * (-len(data) % 4), validate=True)
        except (binascii.Error, ValueError):
            raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = b""
    return {
        "media_type": source.get("media_type"),
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def redact_json(value: Any) -> Any:
    """A redacted deep copy of JSON-shaped ``value`` (e.g. the output of ``dump_messages``).

    Strings are scrubbed with ``redact_text``; values under secret-looking keys become
    ``"[REDACTED]"``; base64 media sources become ``{"media_type", "bytes", "sha256"}``; URL
    sources lose user info and query; reasoning ``redacted_data`` is dropped.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        if value.get("type") == "base64" and "data" in value and "media_type" in value:
            return _media_digest(value)
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if name == "redacted_data" and isinstance(item, str):
                out[name] = REDACTED
            elif name == "url" and isinstance(item, str):
                out[name] = redact_url(item)
            elif name not in ("type", "media_type") and _SECRET_KEY.search(name):
                out[name] = REDACTED
            else:
                out[name] = redact_json(item)
        return out
    if isinstance(value, list | tuple):
        return [redact_json(item) for item in value]
    return value


def cut(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """``text`` cut at ``limit`` characters, with a marker appended when it was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[truncated; {len(text)} characters in total]"


def redact_error(error: BaseException) -> BaseException:
    """A copy of ``error`` whose text (and its causes' text) is scrubbed with ``redact_text``.

    The copy keeps the class and attributes (``status_code``, ``retryable``, ...), so callers
    can still branch on it; string attributes are scrubbed too. Returns ``error`` itself when
    nothing needed scrubbing.
    """
    return _redact_error(error, 0)


def _redact_error(error: BaseException, depth: int) -> BaseException:
    text = _safe_str(error)
    scrubbed = redact_text(text)
    cause = error.__cause__ if depth < 5 else None
    context = error.__context__ if depth < 5 else None
    new_cause = _redact_error(cause, depth + 1) if cause is not None else None
    new_context = _redact_error(context, depth + 1) if context is not None else None
    str_attrs = {
        k: v
        for k, v in getattr(error, "__dict__", {}).items()
        if isinstance(v, str | tuple) and _scrub_plain(v) != v
    }
    if (
        scrubbed == text
        and new_cause is cause
        and new_context is context
        and not str_attrs
        and all(not isinstance(a, str) or redact_text(a) == a for a in error.args)
    ):
        return error
    try:
        clone = copy.copy(error)
    except Exception:
        clone = _bare_copy(error)
    try:
        for key, val in str_attrs.items():
            setattr(clone, key, _scrub_plain(val))
        clone.args = tuple(redact_text(a) if isinstance(a, str) else a for a in error.args)
        if _safe_str(clone) != scrubbed:
            clone.args = (scrubbed,)
        if _safe_str(clone) != scrubbed:
            clone = RuntimeError(scrubbed)
    except Exception:
        clone = RuntimeError(scrubbed)
    clone.__cause__ = new_cause
    clone.__context__ = new_context
    clone.__suppress_context__ = error.__suppress_context__
    clone.__traceback__ = error.__traceback__
    return clone


_PLAIN = (str, int, float, bool, type(None))


def _scrub_plain(value: Any) -> Any:
    """A string attribute scrubbed, or each string of a tuple attribute (``errors``)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, tuple):
        return tuple(redact_text(v) if isinstance(v, str) else v for v in value)
    return value


def _is_plain(value: Any) -> bool:
    """A plain value, or a tuple of them: kept on a detached error."""
    if isinstance(value, tuple):
        return all(isinstance(v, _PLAIN) for v in value)
    return isinstance(value, _PLAIN)


def detached_error(error: BaseException) -> BaseException:
    """``error`` as a run hands it out: scrubbed, and holding nothing else from the call.

    The text and string attributes are scrubbed (``redact_error``); the chain (``__cause__``,
    ``__context__``), the traceback (whose frames hold the request and the client) and any
    attribute that is not a plain value (an SDK's ``response``, ``request`` or ``body``) are
    dropped, so no key, prompt or media can be read from what is left. The class and the plain
    fields (``status_code``, ``retryable``, ``path``, ...) stay. Returns ``error`` itself,
    without its traceback, when it held nothing else.
    """
    clean = redact_error(error)
    state = getattr(clean, "__dict__", {})
    loose = {key for key, value in state.items() if not _is_plain(value)}
    args_plain = all(isinstance(arg, _PLAIN) for arg in clean.args)
    if clean.__cause__ is not None or clean.__context__ is not None or loose or not args_plain:
        clone = _bare_copy(clean)
        for key in loose:
            with contextlib.suppress(Exception):
                delattr(clone, key)
        if not args_plain:
            clone.args = (redact_text(_safe_str(clean)),)
        clean = clone
    clean.__cause__ = None
    clean.__context__ = None
    clean.__suppress_context__ = True
    clean.__traceback__ = None
    return clean


def _bare_copy(error: BaseException) -> BaseException:
    """The same class without calling ``__init__`` (for errors ``copy`` cannot rebuild)."""
    try:
        clone = type(error).__new__(type(error))
        clone.__dict__.update(getattr(error, "__dict__", {}))
        clone.args = error.args
        return clone
    except Exception:
        return RuntimeError(redact_text(_safe_str(error)))


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return type(error).__name__
