"""What plugin authors and tests reuse: a scripted provider, the fake-server kit and the
neutral views the conformance kit compares (``NeutralRequest`` from a plugin's wire reader,
``ScriptedReply`` for its fake server).

The conformance suite is ``oma_core.testing.conformance`` and the pytest plugin
``oma_core.testing.pytest_plugin`` (both import pytest, so they are not re-exported here);
see the "Testing a provider plugin" page of the docs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fake_server import (
    Delay,
    DropConnection,
    EchoRequestError,
    ErrorInFinalEvent,
    ErrorMidStream,
    FakeServer,
    Fault,
    HTTPError,
    JSONLine,
    RecordedRequest,
    Response,
    SlowStream,
    SSEEvent,
    StreamItem,
    TruncatedStream,
)
from .leaks import assert_holds_no_secret, reachable_secrets
from .neutral import NeutralRequest, ScriptedCall, ScriptedReply
from .scripted import Delayed, ScriptedProvider

if TYPE_CHECKING:  # the shared suites import pytest: loaded on first use (``__getattr__``)
    from .suites import FaultSuite, ProviderSuite, ScrubbingSuite, SecretsSuite, SpecSuite

_SUITES = ("FaultSuite", "ProviderSuite", "ScrubbingSuite", "SecretsSuite", "SpecSuite")


def __getattr__(name: str) -> object:
    if name in _SUITES:
        from . import suites

        return getattr(suites, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Delay",
    "Delayed",
    "DropConnection",
    "EchoRequestError",
    "ErrorInFinalEvent",
    "ErrorMidStream",
    "FakeServer",
    "Fault",
    "FaultSuite",
    "HTTPError",
    "JSONLine",
    "NeutralRequest",
    "ProviderSuite",
    "RecordedRequest",
    "Response",
    "SSEEvent",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedReply",
    "ScrubbingSuite",
    "SecretsSuite",
    "SlowStream",
    "SpecSuite",
    "StreamItem",
    "TruncatedStream",
    "assert_holds_no_secret",
    "reachable_secrets",
]
