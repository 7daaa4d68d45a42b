"""The innermost run: where a run's ``oma_run`` reaches the run itself.

Registered like any plugin, ``trylast``, so every run wrapper (progress, evaluation, the run
span, closing, a plugin's own) sits around it. It returns the run's events
(``oma_core._runner.Run.events``): the ``before_run`` hooks, the model loop or the external
agent's turn, and ``done`` with the ``RunResult`` last. Nothing runs before they are iterated.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from .._runner import Run
from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from .._calls import RunContext
    from .._results import StreamEvent

__all__ = ["oma_run"]


@hookimpl(trylast=True)
def oma_run(run: RunContext) -> AsyncGenerator[StreamEvent, None]:
    """The run itself, innermost: every run wrapper sits around it."""
    return Run(run).events()
