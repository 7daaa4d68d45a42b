"""The keys file of the ``oma`` command (``KeyStore``), safe from concurrent writers and from
a hostile directory:

- one writer at a time: ``set`` and ``remove`` read, change and write the file under an
  advisory lock on ``keys.json.lock`` beside it (``filelock``), waiting at most
  ``LOCK_TIMEOUT`` seconds, then one line says the store is busy;
- a write goes to a temp file of a new random name, created O_EXCL|O_NOFOLLOW at 0600 in the
  same directory, is fsynced, renamed over ``keys.json``, and the directory fsynced: a reader
  sees the old file or the new one, never half of one, and a symlink planted anywhere gets
  nothing written through it;
- a store or directory that is a symlink, a FIFO, a device, a directory where a file belongs
  (or the reverse), another user's, or writable by others is refused with one line
  (``KeysFileError``); a read is O_NOFOLLOW|O_NONBLOCK (a FIFO cannot hang it), checked by
  ``fstat`` and at most ``MAX_BYTES``.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import attrs

from ..errors import UsageError
from ._paths import keys_path

__all__ = ["LOCK_TIMEOUT", "MAX_BYTES", "KeyStore", "KeysFileError"]

#: The largest keys file read (a few thousand keys fit in far less).
MAX_BYTES = 1 << 20
#: How long ``set``/``remove`` wait for another writer before giving up, in seconds.
LOCK_TIMEOUT = 20.0
#: How often a waiting writer tries the lock again, in seconds.
_POLL = 0.05

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class KeysFileError(UsageError):
    """The keys store cannot be trusted, read or written: ``path`` names the file, directory
    or lock, ``reason`` what is wrong with it and the way out. Never holds a key."""

    code = "KEYS_FILE"

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path} {reason}")


@attrs.frozen
class KeyStore:
    """The keys file at ``path`` (``default()``: the one ``oma keys path`` prints)."""

    path: Path
    lock_timeout: float = LOCK_TIMEOUT

    @classmethod
    def default(cls) -> KeyStore:
        return cls(keys_path(), LOCK_TIMEOUT)

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def read(self) -> tuple[dict[str, str], int | None]:
        """The stored keys and the file's mode (``{}, None`` when there is no store).

        No lock is taken: a write replaces the file whole, so a reader never sees half of one.
        """
        directory = self._open_directory(create=False)
        if directory is None:
            return {}, None
        try:
            return self._load(directory)
        finally:
            os.close(directory)

    def set(self, name: str, key: str) -> None:
        """Store ``key`` as ``name``'s, keeping every other key (one writer at a time)."""
        with self._changing() as keys:
            keys[name] = key

    def remove(self, name: str) -> bool:
        """Forget ``name``'s key; False when none was stored."""
        with self._changing(always=False) as keys:
            found = keys.pop(name, None) is not None
        return found

    # -- the pieces ----------------------------------------------------------------------------

    @contextmanager
    def _changing(self, *, always: bool = True) -> Iterator[dict[str, str]]:
        """The stored keys to change in place, written back under the lock: ``always``, or
        when changed (a rewrite also leaves a file others could read at 0600)."""
        directory = self._open_directory(create=True)
        assert directory is not None
        try:
            with self._locked():
                keys, _ = self._load(directory)
                before = dict(keys)
                yield keys
                if always or keys != before:
                    self._write(directory, keys)
        finally:
            os.close(directory)

    def _open_directory(self, create: bool) -> int | None:
        """The store's directory, opened without following a symlink and checked."""
        directory = self.path.parent
        if create:
            try:
                directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except FileExistsError:
                raise KeysFileError(directory, f"{_what(directory)}, not a directory") from None
            except OSError as error:
                raise KeysFileError(directory, f"cannot be created: {error.strerror}") from None
        try:
            fd = os.open(directory, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            if create:
                raise KeysFileError(directory, "vanished while oma used it") from None
            return None
        except OSError:
            raise KeysFileError(
                directory, f"{_what(directory)}; the keys live in a real directory of your own"
            ) from None
        try:
            _trust(os.fstat(fd), directory, "700")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _load(self, directory: int) -> tuple[dict[str, str], int | None]:
        path, name = self.path, self.path.name
        flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
        try:
            fd = os.open(name, flags, dir_fd=directory)
        except FileNotFoundError:
            return {}, None
        except OSError:
            raise KeysFileError(path, f"{_what(path)}, not a keys file; remove it") from None
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                raise KeysFileError(path, f"{_what(path)}, not a keys file; remove it")
            _trust(status, path, "600")
            if status.st_size > MAX_BYTES:
                raise KeysFileError(path, f"is larger than {MAX_BYTES} bytes: not a keys file")
            data = _read_at_most(fd, MAX_BYTES + 1)
        except OSError as error:
            raise KeysFileError(path, f"cannot be read: {error.strerror}") from None
        finally:
            os.close(fd)
        if len(data) > MAX_BYTES:
            raise KeysFileError(path, f"is larger than {MAX_BYTES} bytes: not a keys file")
        return _parse(data, path), stat.S_IMODE(status.st_mode)

    def _write(self, directory: int, keys: dict[str, str]) -> None:
        data = _dump(keys).encode("utf-8")
        temporary = f".{self.path.name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        try:
            fd = os.open(temporary, flags, 0o600, dir_fd=directory)
        except OSError as error:
            raise KeysFileError(self.path.parent, f"cannot be written: {error.strerror}") from None
        try:
            try:
                os.fchmod(fd, 0o600)  # whatever the umask left
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException as error:  # Ctrl-C included: leave no temp file behind
            with suppress(OSError):
                os.unlink(temporary, dir_fd=directory)
            if isinstance(error, OSError):
                raise KeysFileError(self.path, f"cannot be written: {error.strerror}") from None
            raise
        os.fsync(directory)  # the rename itself survives a crash

    @contextmanager
    def _locked(self) -> Iterator[None]:
        from filelock import FileLock, Timeout

        lock = FileLock(self.lock_path, timeout=self.lock_timeout, mode=0o600, poll_interval=_POLL)
        try:
            lock.acquire()
        except Timeout:
            raise KeysFileError(
                self.lock_path,
                f"is held by another oma command for over {self.lock_timeout:g} s; "
                "try again when it ends",
            ) from None
        except OSError as error:
            raise KeysFileError(
                self.lock_path, f"cannot be locked ({error.strerror}); remove it"
            ) from None
        try:
            yield
        finally:
            lock.release()


def _trust(status: os.stat_result, path: Path, private: str) -> None:
    """Refuse a file or directory another user owns or may write."""
    if status.st_uid != os.geteuid():
        raise KeysFileError(
            path, f"belongs to another user (uid {status.st_uid}); oma keeps keys only in yours"
        )
    mode = stat.S_IMODE(status.st_mode)
    if mode & 0o022:
        raise KeysFileError(
            path, f"can be written by others (mode {mode:o}); run: chmod {private} {path}"
        )


def _what(path: Path) -> str:
    """What is at ``path``, for an error: "is a symlink", "is a FIFO", ..."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as error:
        return f"cannot be opened ({error.strerror})"
    kinds = (
        (stat.S_ISLNK, "is a symlink"),
        (stat.S_ISDIR, "is a directory"),
        (stat.S_ISFIFO, "is a FIFO"),
        (stat.S_ISSOCK, "is a socket"),
        (stat.S_ISCHR, "is a device"),
        (stat.S_ISBLK, "is a device"),
        (stat.S_ISREG, "is a file"),
    )
    return next((said for test, said in kinds if test(mode)), "is not a regular file")


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _dump(keys: dict[str, str]) -> str:
    """``json.dumps(keys, indent=2, sort_keys=True)``, at the speed of the C encoder (which
    ``indent`` turns off): a thousand keys are rewritten on every ``set``."""
    lines = (f"  {json.dumps(name)}: {json.dumps(key)}" for name, key in sorted(keys.items()))
    body = ",\n".join(lines)
    return f"{{\n{body}\n}}\n" if body else "{}\n"


def _parse(data: bytes, path: Path) -> dict[str, str]:
    try:
        keys: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise KeysFileError(path, "is not a JSON object of keys; fix or remove it") from None
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise KeysFileError(path, "is not a JSON object of name -> key strings; fix or remove it")
    return dict(keys)
