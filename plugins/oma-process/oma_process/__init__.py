"""oma-process: run any command-line agent (Claude Code, Codex, ...) as an oma backend.

``AgentConfig(name=..., backend={"kind": "process", "command": "claude", "args": ["-p"]})``
runs the command once per turn, sends the prompt on stdin and streams stdout back.
"""

from __future__ import annotations

from oma_core import BackendSpec, hookimpl
from oma_core.processes import ALLOWED_ENV

from ._backend import ProcessBackend, compose_prompt

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

__all__ = ["ALLOWED_ENV", "ProcessBackend", "compose_prompt", "oma_register_backends"]


@hookimpl
def oma_register_backends() -> list[BackendSpec]:
    """Offer the "process" backend kind."""
    return [
        BackendSpec(
            kind="process",
            display_name="Process",
            factory=ProcessBackend,
            text_only=True,
            description="Any command-line agent, run once per turn (prompt on stdin, stdout out)",
        )
    ]
