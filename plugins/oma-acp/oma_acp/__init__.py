"""oma-acp: drive any Agent Client Protocol (ACP) agent as an oma backend.

``AgentConfig(name=..., backend={"kind": "acp", "command": "my-agent", "args": ["--acp"]})``
spawns the agent, opens ACP sessions in ``cwd`` and maps its session updates onto oma's
events; permission requests are answered by ``permission`` and file access stays in ``cwd``.
The acp package (and pydantic) load when the first backend is made, not when plugins load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oma_core import BackendSpec, hookimpl
from oma_core.processes import ALLOWED_ENV

from ._permissions import PermissionOption, PermissionRequest

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

if TYPE_CHECKING:
    from ._backend import AcpBackend

__all__ = [
    "ALLOWED_ENV",
    "AcpBackend",
    "PermissionOption",
    "PermissionRequest",
    "oma_register_backends",
]


def __getattr__(name: str) -> Any:
    if name == "AcpBackend":
        from ._backend import AcpBackend

        return AcpBackend
    raise AttributeError(f"module 'oma_acp' has no attribute {name!r}")


def _make_backend(options: Mapping[str, Any]) -> AcpBackend:
    from ._backend import AcpBackend

    return AcpBackend(options)


@hookimpl
def oma_register_backends() -> list[BackendSpec]:
    """Offer the "acp" backend kind."""
    return [
        BackendSpec(
            kind="acp",
            display_name="ACP agent",
            factory=_make_backend,
            text_only=True,
            description="Any Agent Client Protocol agent over stdio (sessions, permissions, fs)",
        )
    ]
