"""The read guard's shortcuts count what its plain rules count.

``EventBytes`` finds the last event boundary with ``rfind`` when a window holds no CR; the
rule it shortcuts is a scan of every window with a regular expression (kept here as the
reference). ``BodyReader`` skips the UTF-8 decoder for an ASCII piece while the decoder holds
no partial character; the rule is that a stream is refused exactly when it is not UTF-8.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oma_core.errors import ProviderError
from oma_core.http import BodyReader, ReadLimits
from oma_core.http._bounded import EventBytes

_BOUNDARY = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


class _Reference:
    """``EventBytes`` as a regex scan of every window (its first form)."""

    def __init__(self) -> None:
        self.pending = 0
        self._tail = b""

    def add(self, piece: bytes) -> int:
        window = self._tail + piece
        last = None
        for match in _BOUNDARY.finditer(window):
            last = match
        if last is not None and last.end() > len(self._tail):
            self.pending = len(window) - last.end()
        else:
            self.pending += len(piece)
        self._tail = window[-3:]
        return self.pending


#: Streams made of the bytes that matter to a boundary, and a few others.
_STREAMS = st.lists(
    st.sampled_from([b"\n", b"\r", b"\r\n", b"a", b"data: x", b"\xc3\xa9", b" "]), max_size=80
).map(b"".join)


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(data=_STREAMS, cuts=st.lists(st.integers(0, 400), max_size=12))
@example(data=b"data: x\n\n\n", cuts=[])  # a run of three LFs: one boundary and a line end
@example(data=b"data: x\n\n\nb\n\n\n\n\n", cuts=[8, 12])
def test_event_bytes_counts_as_the_regex_scan_however_the_stream_is_cut(
    data: bytes, cuts: list[int]
) -> None:
    fast, reference = EventBytes(), _Reference()
    for piece in _split(data, cuts):
        assert fast.add(piece) == reference.add(piece), (data, piece)


@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_event_bytes_counts_as_the_regex_scan_on_any_bytes(data: bytes, cuts: list[int]) -> None:
    fast, reference = EventBytes(), _Reference()
    for piece in _split(data, cuts):
        assert fast.add(piece) == reference.add(piece)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_an_event_split_anywhere_counts_from_its_boundary(newline: bytes) -> None:
    """Events exactly at the limit pass however the stream is cut, a boundary straddling
    two pieces included (missed, it would add the next event to the count); one byte more
    than the limit without a boundary does not."""
    event = b'data: {"pad": "ppp"}' + newline + newline
    stream = event * 3
    for cut in range(1, len(stream)):
        reader = BodyReader(
            provider="S",
            limits=ReadLimits(max_event_bytes=len(event)),
            content_type="text/event-stream",
        )
        pieces = [p for part in (stream[:cut], stream[cut:]) for p in reader.feed(part)]
        assert b"".join(pieces) == stream
    limits = ReadLimits(max_event_bytes=len(event))
    reader = BodyReader(provider="S", limits=limits, content_type="text/event-stream")
    with pytest.raises(ProviderError, match="server-sent event exceeds the limit"):
        list(reader.feed(event[:-2] + b"x" * 3))


#: Pieces as they may arrive: whole text, any bytes, and characters cut in two.
_PIECES = st.lists(
    st.one_of(
        st.text(max_size=20).map(lambda t: t.encode()),
        st.binary(max_size=8),
        st.sampled_from([b"a", b"\xc3", b"\xa9", b"\xe2\x82", b"\xac", b"\xff", b"\n"]),
    ),
    max_size=12,
)


@pytest.mark.parametrize("content_type", ["text/event-stream", "application/x-ndjson"])
@given(pieces=_PIECES)
@example(pieces=[b"\xc3", b"a", b"\xa9"])  # ASCII between a character's two halves
def test_a_stream_is_refused_exactly_when_it_is_not_utf8(
    content_type: str, pieces: list[bytes]
) -> None:
    data = b"".join(pieces)
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    reader = BodyReader(provider="S", limits=ReadLimits(), content_type=content_type)
    try:
        out = [p for piece in pieces for p in reader.feed(piece)]
        out += reader.end()
    except ProviderError as error:
        assert not valid, pieces
        assert error.message == "S sent a malformed response: the stream is not valid UTF-8"
    else:
        assert valid, pieces
        assert b"".join(out) == data
