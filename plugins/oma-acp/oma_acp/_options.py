"""The options of ``backend={"kind": "acp", ...}``, checked once when the backend is made."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import attrs

from oma_core.errors import BackendError
from oma_core.processes import CommandOptions, number_option

if TYPE_CHECKING:
    from ._permissions import PermissionRequest

__all__ = ["AcpOptions", "PermissionPolicy"]

#: "allow", "reject", or a callable that picks an option id (None: answer "cancelled").
PermissionPolicy: TypeAlias = (
    str | Callable[["PermissionRequest"], "str | Awaitable[str | None] | None"]
)

_FS_MODES = ("read-write", "read-only", "none")
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_MAX_STDERR_BYTES = 64 * 1024


@attrs.frozen
class AcpOptions:
    """How to start the agent and what its client (oma) lets it do.

    ``cwd`` is the session's working directory and the root the agent's file reads and writes
    are confined to (default: the current directory when the backend is made). ``fs`` says
    which of the two the client offers. ``timeout`` bounds each turn; ``startup_timeout`` the
    start and ``initialize`` handshake.
    """

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str | None] = attrs.field(factory=dict, repr=False)
    cwd: str = attrs.field(factory=os.getcwd)
    permission: PermissionPolicy = "reject"
    fs: str = "read-write"
    timeout: float | None = None
    startup_timeout: float = 30.0
    max_message_bytes: int = _MAX_MESSAGE_BYTES
    max_stderr_bytes: int = _MAX_STDERR_BYTES
    max_restarts: int = 3
    kill_grace: float = 2.0

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> AcpOptions:
        fields = {field.name for field in attrs.fields(cls)}
        base = CommandOptions.from_mapping(
            options, backend="acp", known=fields, what="the agent program"
        )
        cwd = base.cwd
        root = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
        if not os.path.isdir(root):
            raise _invalid(f'"cwd" is not a directory: {root}')
        permission = options.get("permission", "reject")
        if not callable(permission) and permission not in ("allow", "reject"):
            raise _invalid('"permission" must be "allow", "reject" or a callable')
        fs = options.get("fs", "read-write")
        if fs not in _FS_MODES:
            raise _invalid(f'"fs" must be one of {", ".join(_FS_MODES)}')
        max_restarts = options.get("max_restarts", 3)
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
            raise _invalid('"max_restarts" must be a whole number >= 0')
        return cls(
            command=base.command,
            args=base.args,
            env=base.env,
            cwd=root,
            permission=permission,
            fs=fs,
            timeout=_number(options, "timeout", None),
            startup_timeout=float(_number(options, "startup_timeout", 30.0)),
            max_message_bytes=int(_number(options, "max_message_bytes", _MAX_MESSAGE_BYTES)),
            max_stderr_bytes=int(_number(options, "max_stderr_bytes", _MAX_STDERR_BYTES)),
            max_restarts=max_restarts,
            kill_grace=float(_number(options, "kill_grace", 2.0, allow_zero=True)),
        )


def _number(
    options: Mapping[str, Any], name: str, default: Any, *, allow_zero: bool = False
) -> Any:
    return number_option(options, name, default, backend="acp", allow_zero=allow_zero)


def _invalid(reason: str) -> BackendError:
    return BackendError(f"acp backend: {reason}", backend="acp")
