"""The run log's media store: the media of logged conversations, kept by content hash.

The log database keeps a media block as its type, size and SHA-256 only; the bytes live here,
one file per payload named by the SHA-256 of its decoded bytes, so ``oma run -c`` can send
them again. The directory is private (0700, its files 0600); a file is written under a unique
temporary name (``O_EXCL | O_NOFOLLOW``), synced, then renamed into place, so a reader never
sees half a file and a name planted in the directory is never written through. A file is
checked against its name when read: a missing or changed one reads as None.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["MediaStore", "payloads"]

_NAME = re.compile(r"[0-9a-f]{64}")
_TEMP_SUFFIX = ".tmp"


def decoded(data: str) -> bytes | None:
    """A base64 payload's bytes, decoded as ``oma_core.redaction`` decodes it for its SHA-256
    (padding forgiven), or None when it is not base64."""
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def payloads(value: Any) -> Iterator[bytes]:
    """The decoded bytes of every base64 media source in JSON-shaped ``value`` (the output of
    ``dump_messages``), tool results included."""
    if isinstance(value, dict):
        data = value.get("data")
        if value.get("type") == "base64" and isinstance(data, str) and "media_type" in value:
            raw = decoded(data)
            if raw is not None:
                yield raw
            return
        for item in value.values():
            yield from payloads(item)
    elif isinstance(value, list):
        for item in value:
            yield from payloads(item)


class MediaStore:
    """The store in ``directory`` (created 0700 on first write)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"MediaStore({str(self.directory)!r})"

    def _private_directory(self) -> None:
        """Create the directory 0700, or check it: a real directory (not a symlink), and
        tightened to 0700 when it is ours and looser."""
        with contextlib.suppress(FileExistsError):
            self.directory.mkdir(mode=0o700, parents=True)
        info = os.lstat(self.directory)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(f"the media store {self.directory} is not a directory")
        if stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.getuid():
            os.chmod(self.directory, 0o700)

    def put(self, raw: bytes) -> str:
        """Keep ``raw`` (once: an existing file of the right size is left as it is); its
        SHA-256."""
        name = hashlib.sha256(raw).hexdigest()
        self._private_directory()
        final = self.directory / name
        try:
            info = os.lstat(final)
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISREG(info.st_mode) and info.st_size == len(raw):
                return name
        temp = self.directory / f".{name}.{secrets.token_hex(8)}{_TEMP_SUFFIX}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(raw)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, final)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return name

    def get(self, sha256: str, size: int | None = None) -> bytes | None:
        """The bytes kept under ``sha256``, or None when they are missing or no longer hash to
        their name (``size``, when known, bounds what is read)."""
        if not _NAME.fullmatch(sha256):
            return None
        try:
            fd = os.open(self.directory / sha256, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            if size is not None and info.st_size != size:
                return None
            raw = file.read(info.st_size + 1)
        if hashlib.sha256(raw).hexdigest() != sha256:
            return None
        return raw

    def names(self) -> list[str]:
        """The hashes kept."""
        try:
            entries = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return [name for name in entries if _NAME.fullmatch(name)]

    def remove_all_but(self, keep: Iterable[str]) -> int:
        """Remove every file not named in ``keep`` (and any temporary file left by a writer
        that died); how many media files were removed. Call it while no writer runs (the log
        holds its write lock)."""
        kept = set(keep)
        removed = 0
        try:
            entries = os.listdir(self.directory)
        except FileNotFoundError:
            return 0
        for entry in entries:
            path = self.directory / entry
            if _NAME.fullmatch(entry):
                if entry in kept:
                    continue
                removed += 1
            elif not (entry.startswith(".") and entry.endswith(_TEMP_SUFFIX)):
                continue  # not ours
            path.unlink(missing_ok=True)
        return removed
