"""A URL's origin (``scheme://host[:port]``): the unit a stored key is bound to, and the
only part of a base URL a message names (never its user info, path or query, which may hold
a password or a token)."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["custom_host", "origin"]

#: The port a scheme uses when a URL names none (dropped from an origin).
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str | None) -> str | None:
    """``url``'s normalised origin, ``scheme://host[:port]`` (lower case, the scheme's
    default port dropped, no user info, path or query), or None when it has none: the unit a
    stored key is bound to, as a browser binds credentials."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    if ":" in host:  # IPv6
        host = f"[{host}]"
    shown_port = "" if port is None or port == _DEFAULT_PORTS[scheme] else f":{port}"
    return f"{scheme}://{host}{shown_port}"


def custom_host(base_url: str | None, default_base_url: str | None) -> str | None:
    """The origin of ``base_url`` when it is not the one of ``default_base_url`` (a run
    against another host than the provider's own: its key is stored for that origin), else
    None."""
    where = origin(base_url)
    if where is None or where == origin(default_base_url):
        return None
    return where
