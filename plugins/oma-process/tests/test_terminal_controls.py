"""``strip_terminal_controls``: child output that becomes error text carries no terminal control.

Both backends put a child's stderr (and an ACP agent's error messages) into ``BackendError``
through it; a sequence printed with the error could clear the screen, retitle the window or
fake output.
"""

from __future__ import annotations

import asyncio
import re

from hypothesis import given
from hypothesis import strategies as st

from oma_core.processes import StderrTail, strip_terminal_controls

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PLAIN = st.text(st.characters(exclude_categories=("Cc",)) | st.sampled_from("\n\t"))
_PAYLOAD = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
_PARAMETERS = st.text(st.characters(min_codepoint=0x30, max_codepoint=0x3F), max_size=6)
_INTERMEDIATES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2F), max_size=2)


@st.composite
def _sequences(draw: st.DrawFn) -> str:
    """One complete control sequence: CSI, OSC/DCS/APC/PM/SOS string, other ESC, or a C0/C1."""
    kind = draw(st.sampled_from(["csi", "string", "escape", "single"]))
    if kind == "csi":
        introducer = draw(st.sampled_from(["\x1b[", "\x9b"]))
        final = draw(st.characters(min_codepoint=0x40, max_codepoint=0x7E))
        return introducer + draw(_PARAMETERS) + draw(_INTERMEDIATES) + final
    if kind == "string":
        introducer = draw(st.sampled_from(["\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX", "\x9d"]))
        terminator = draw(st.sampled_from(["\x07", "\x1b\\", "\x9c"]))
        return introducer + draw(_PAYLOAD) + terminator
    if kind == "escape":
        final = draw(st.characters(min_codepoint=0x30, max_codepoint=0x7E))
        return "\x1b" + draw(_INTERMEDIATES) + final
    # A lone control, but not one that opens a sequence (it would take in the text after it).
    return draw(
        st.characters(max_codepoint=0x9F).filter(
            lambda c: bool(_CONTROL.fullmatch(c)) and c not in "\x1b\x90\x98\x9b\x9d\x9e\x9f"
        )
    )


@given(st.text())
def test_no_control_character_but_newline_and_tab_survives(text: str) -> None:
    assert not _CONTROL.search(strip_terminal_controls(text))


@given(st.text())
def test_stripping_twice_changes_nothing_more(text: str) -> None:
    once = strip_terminal_controls(text)
    assert strip_terminal_controls(once) == once


@given(_PLAIN)
def test_text_without_control_is_kept_as_it_is(text: str) -> None:
    assert strip_terminal_controls(text) == text


@given(_PLAIN, st.lists(_sequences(), min_size=1, max_size=4), _PLAIN)
def test_a_whole_sequence_goes_and_the_text_around_it_stays(
    before: str, sequences: list[str], after: str
) -> None:
    assert strip_terminal_controls(before + "".join(sequences) + after) == before + after


@given(st.text())
def test_newlines_and_tabs_are_never_removed(text: str) -> None:
    stripped = strip_terminal_controls(text)
    assert (stripped.count("\n"), stripped.count("\t")) == (text.count("\n"), text.count("\t"))


def test_the_sequences_of_the_issue_are_removed() -> None:
    noisy = (
        "\x1b[2J\x1b[H\x1b]0;pwned title\x07\x1b[1;31mfatal:\x1b[0m bad\r\n\x1b]8;;http://x\x1b\\l"
    )
    assert strip_terminal_controls(noisy) == "fatal: bad\nl"


@given(st.binary(max_size=300), st.integers(min_value=0, max_value=200))
def test_a_stderr_tail_of_any_bytes_carries_no_control(data: bytes, limit: int) -> None:
    async def tail() -> str:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        stderr = StderrTail(limit)
        await stderr.drain(reader)
        return stderr.text()

    assert not _CONTROL.search(asyncio.run(tail()))
