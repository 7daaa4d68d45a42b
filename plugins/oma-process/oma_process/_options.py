"""The options of ``backend={"kind": "process", ...}``, checked once when the backend is made."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from oma_core.errors import BackendError

__all__ = ["ProcessOptions"]

_INPUT_MODES = ("stdin", "argument", "none")
_MAX_OUTPUT_BYTES = 10 * 1024 * 1024
_MAX_STDERR_BYTES = 64 * 1024
_KILL_GRACE = 2.0


@attrs.frozen
class ProcessOptions:
    """How to start the command and how far to let it go.

    ``env`` adds variables to the allow-listed environment (None: copy that one from the
    parent). ``timeout`` bounds each run in seconds; the run's own remaining time
    (``BackendRequest.timeout``) applies too, whichever is shorter.
    """

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str | None] = attrs.field(factory=dict, repr=False)
    cwd: str | None = None
    input: str = "stdin"
    timeout: float | None = None
    max_output_bytes: int = _MAX_OUTPUT_BYTES
    max_stderr_bytes: int = _MAX_STDERR_BYTES
    kill_grace: float = _KILL_GRACE

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> ProcessOptions:
        known = {field.name for field in attrs.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise _invalid(f"unknown option(s) {', '.join(map(repr, unknown))}")
        command = options.get("command")
        if not isinstance(command, str) or not command:
            raise _invalid('"command" must be a non-empty string (the program to run)')
        args = options.get("args", ())
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise _invalid('"args" must be a list of strings')
        env = options.get("env") or {}
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in env.items()
        ):
            raise _invalid('"env" must map variable names to strings (or None to inherit)')
        cwd = options.get("cwd")
        if cwd is not None and not isinstance(cwd, str | os.PathLike):
            raise _invalid('"cwd" must be a path')
        mode = options.get("input", "stdin")
        if mode not in _INPUT_MODES:
            raise _invalid(f'"input" must be one of {", ".join(_INPUT_MODES)}')
        return cls(
            command=command,
            args=tuple(args),
            env=dict(env),
            cwd=None if cwd is None else os.fspath(cwd),
            input=mode,
            timeout=_positive(options, "timeout", None),
            max_output_bytes=int(_positive(options, "max_output_bytes", _MAX_OUTPUT_BYTES)),
            max_stderr_bytes=int(_positive(options, "max_stderr_bytes", _MAX_STDERR_BYTES)),
            kill_grace=float(_positive(options, "kill_grace", _KILL_GRACE, allow_zero=True)),
        )


def _positive(
    options: Mapping[str, Any], name: str, default: Any, *, allow_zero: bool = False
) -> Any:
    value = options.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(f'"{name}" must be a number')
    if value < 0 or (value == 0 and not allow_zero):
        raise _invalid(f'"{name}" must be positive')
    return value


def _invalid(reason: str) -> BackendError:
    return BackendError(f"process backend: {reason}", backend="process")
