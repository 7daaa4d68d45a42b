"""What plugin authors and tests reuse: a scripted provider, the fake-server kit and the
neutral views the conformance kit compares (``NeutralRequest`` from a plugin's wire reader,
``ScriptedReply`` for its fake server).

The conformance suite is ``oma_core.testing.conformance`` and the pytest plugin
``oma_core.testing.pytest_plugin`` (both import pytest, so they are not re-exported here);
see the "Testing a provider plugin" page of the docs.
"""

from __future__ import annotations

from .fake_server import (
    Delay,
    DropConnection,
    EchoRequestError,
    ErrorMidStream,
    FakeServer,
    Fault,
    HTTPError,
    RecordedRequest,
    Response,
    SlowStream,
    SSEEvent,
    TruncatedStream,
)
from .leaks import assert_holds_no_secret, reachable_secrets
from .neutral import NeutralRequest, ScriptedCall, ScriptedReply
from .scripted import Delayed, ScriptedProvider

__all__ = [
    "Delay",
    "Delayed",
    "DropConnection",
    "EchoRequestError",
    "ErrorMidStream",
    "FakeServer",
    "Fault",
    "HTTPError",
    "NeutralRequest",
    "RecordedRequest",
    "Response",
    "SSEEvent",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedReply",
    "SlowStream",
    "TruncatedStream",
    "assert_holds_no_secret",
    "reachable_secrets",
]
