"""The options of ``backend={"kind": "process", ...}``, checked once when the backend is made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from oma_core.errors import BackendError
from oma_core.processes import CommandOptions, number_option

__all__ = ["ProcessOptions"]

_INPUT_MODES = ("stdin", "argument", "none")
_MAX_OUTPUT_BYTES = 10 * 1024 * 1024
_MAX_STDERR_BYTES = 64 * 1024
_KILL_GRACE = 2.0
_EXIT_GRACE = 10.0


@attrs.frozen
class ProcessOptions:
    """How to start the command and how far to let it go.

    ``env`` adds variables to the allow-listed environment (None: copy that one from the
    parent). ``timeout`` bounds each run in seconds; the run's own remaining time
    (``BackendRequest.timeout``) applies too, whichever is shorter. ``exit_grace`` bounds the
    wait for the command to exit once it has closed stdout, timeout or not.
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
    exit_grace: float = _EXIT_GRACE

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> ProcessOptions:
        fields = {field.name for field in attrs.fields(cls)}
        base = CommandOptions.from_mapping(
            options, backend="process", known=fields, what="the program to run"
        )
        mode = options.get("input", "stdin")
        if mode not in _INPUT_MODES:
            raise BackendError(
                f'process backend: "input" must be one of {", ".join(_INPUT_MODES)}',
                backend="process",
            )
        return cls(
            command=base.command,
            args=base.args,
            env=base.env,
            cwd=base.cwd,
            input=mode,
            timeout=_number(options, "timeout", None),
            max_output_bytes=int(_number(options, "max_output_bytes", _MAX_OUTPUT_BYTES)),
            max_stderr_bytes=int(_number(options, "max_stderr_bytes", _MAX_STDERR_BYTES)),
            kill_grace=float(_number(options, "kill_grace", _KILL_GRACE, allow_zero=True)),
            exit_grace=float(_number(options, "exit_grace", _EXIT_GRACE, allow_zero=True)),
        )


def _number(
    options: Mapping[str, Any], name: str, default: Any, *, allow_zero: bool = False
) -> Any:
    return number_option(options, name, default, backend="process", allow_zero=allow_zero)
