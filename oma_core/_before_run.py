"""``before_run``: rewriting a run's input before the first model call (the agent's machinery;
what a hook receives, ``BeforeRunContext``, is public in ``oma_core``).

Package hooks (``oma_before_run``, in pluggy's order) run first, then the agent's own; each
receives the previous one's result and returns None (unchanged), a ``ctx`` changed with
``attrs.evolve``, or a mapping with ``messages`` and/or ``prompt``. New messages are validated
and replace the input first; then a changed prompt replaces the first text block of the latest
user turn, its other text blocks are dropped and non-text blocks keep their order:
``[img A, "t1", img B, "t2"]`` with prompt "new" becomes ``[img A, "new", img B]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._config import AgentConfig, BeforeRunContext
from .errors import HookError
from .messages import LLMMessage, TextBlock, prompt_of
from .validation import load_messages

__all__ = ["NamedHook", "apply_before_run", "replace_prompt"]

#: A hook with the name errors call it by.
NamedHook = tuple[str, Callable[["BeforeRunContext"], Any]]


async def apply_before_run(
    messages: tuple[LLMMessage, ...], hooks: Sequence[NamedHook], config: AgentConfig
) -> tuple[tuple[LLMMessage, ...], bool]:
    """Chain ``hooks`` over ``messages``; return the new input and whether some hook replaced
    the messages (not just the prompt).

    Raises ``HookError`` for a hook that raises or returns garbage, ``InvalidMessageError`` for
    messages that do not validate.
    """
    replaced = False
    for label, hook in hooks:
        prompt = prompt_of(messages)
        try:
            value = hook(BeforeRunContext(messages, prompt, config))
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise HookError(f"{label} raised {_describe(exc)}", hook=label) from exc
        if value is None:
            continue
        if isinstance(value, BeforeRunContext):
            new_messages: Any = value.messages
            new_prompt: Any = value.prompt
        elif isinstance(value, Mapping):
            # "agent" is tolerated (and ignored) so a hook may hand back the whole context as
            # a mapping, the way the reference's ``{...ctx, prompt}`` does; typos are refused.
            unknown = sorted(
                str(key) for key in value if key not in ("messages", "prompt", "agent")
            )
            if unknown:
                raise HookError(
                    f"{label} returned unknown keys {', '.join(unknown)}; "
                    'expected "messages" and/or "prompt"',
                    hook=label,
                )
            new_messages = value.get("messages", messages)
            new_prompt = value.get("prompt", prompt)
        else:
            raise HookError(
                f"{label} must return None, a BeforeRunContext or a mapping, "
                f"got {type(value).__name__}",
                hook=label,
            )
        if new_messages is not messages:
            loaded = load_messages(new_messages)
            replaced = replaced or loaded != messages
            messages = loaded
        if not isinstance(new_prompt, str):
            raise HookError(
                f"{label} returned a prompt that is not a str: {type(new_prompt).__name__}",
                hook=label,
            )
        if new_prompt != prompt:
            messages = replace_prompt(messages, new_prompt)
    return messages, replaced


def replace_prompt(messages: tuple[LLMMessage, ...], prompt: str) -> tuple[LLMMessage, ...]:
    """Put ``prompt`` in place of the latest user turn's text blocks (a text block is
    prepended if the turn has none; a user turn is appended if there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "user":
            continue
        content: list[Any] = []
        placed = False
        for block in message.content:
            if isinstance(block, TextBlock):
                if not placed:
                    content.append(TextBlock(prompt))
                    placed = True
            else:
                content.append(block)
        if not placed:
            content.insert(0, TextBlock(prompt))
        return (*messages[:index], LLMMessage("user", tuple(content)), *messages[index + 1 :])
    return (*messages, LLMMessage("user", (TextBlock(prompt),)))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
