"""A fake command-line agent for the process backend's tests; the first argument picks a mode.

echo               print {"argv", "env", "stdin", "cwd"} as JSON
cat                copy stdin to stdout
chunks             print "alpha", "beta", "gamma" with pauses (and a 2-byte UTF-8 char split)
flood N            write N bytes to stdout
stderr-flood N     write N bytes to stderr, then "done" to stdout
fail CODE TEXT     write TEXT to stderr and exit with CODE
signal NAME        kill itself with signal NAME
hang FILE          ignore SIGTERM, fork a grandchild that ignores it too, write both pids and the
                   group id to FILE, say "ready", then sleep
sleep SECONDS      sleep (SIGTERM ends it), then print "woke"
linger FILE        fork a grandchild that keeps stdout open and sleeps, write the group id to
                   FILE, print "parent done" and exit 0
count FILE         append a line to FILE (one per spawn), then behave like cat
interleave N       write N bytes to stderr in blocks, with 100 KB of stdout after every tenth
                   block, then "end" to stdout
leak VAR           write terminal control sequences, its stdin and $VAR to stderr, exit 1
close-stdout FILE  write its pid and group id to FILE, print "answer", close stdout, sleep
close-then-exit    print "answer", close stdout, exit 0 a moment later
escape FILE        fork a grandchild that calls setsid (leaving the group), keeps stdout and
                   stderr open and sleeps; write its pid to FILE, print "parent done", exit 0
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import sys
import termios
import time


def _out(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _until_read(fd: int) -> None:
    """Wait until the reader has taken every byte written to the pipe ``fd``, so the next
    write reaches it as a separate read however loaded the machine (a sleep does not: a
    reader that wakes late gets both writes at once). Bounded at 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
        except OSError:  # not a pipe, or no FIONREAD on this end: pace by time instead
            time.sleep(0.05)
            return
        if waiting == 0:
            return
        time.sleep(0.005)


def main(argv: list[str]) -> int:
    mode = argv[0] if argv else "echo"
    if mode == "echo":
        stdin = sys.stdin.buffer.read().decode("utf-8") if not sys.stdin.closed else ""
        _out(
            json.dumps(
                {"argv": argv, "env": dict(os.environ), "stdin": stdin, "cwd": os.getcwd()}
            ).encode()
        )
    elif mode == "count":
        with open(argv[1], "a") as handle:
            handle.write("spawned\n")
        while chunk := os.read(0, 65536):
            _out(chunk)
    elif mode == "cat":
        while chunk := os.read(0, 65536):
            _out(chunk)
    elif mode == "chunks":
        for piece in (b"alpha ", b"beta ", b"gamma \xc3", b"\xa9"):
            _out(piece)
            _until_read(1)
    elif mode == "flood":
        remaining = int(argv[1])
        block = b"x" * 65536
        while remaining > 0:
            _out(block[:remaining])
            remaining -= len(block)
    elif mode == "stderr-flood":
        remaining = int(argv[1])
        block = b"e" * 65535 + b"\n"
        while remaining > 0:
            sys.stderr.buffer.write(block[:remaining])
            remaining -= len(block)
        sys.stderr.buffer.flush()
        _out(b"done")
    elif mode == "fail":
        sys.stderr.write(argv[2] if len(argv) > 2 else "failed")
        sys.stderr.flush()
        return int(argv[1])
    elif mode == "signal":
        os.kill(os.getpid(), getattr(signal, argv[1]))
        time.sleep(5)
    elif mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(600)
            os._exit(0)
        with open(argv[1], "w") as handle:
            json.dump({"pid": os.getpid(), "grandchild": grandchild, "pgid": os.getpgid(0)}, handle)
        _out(b"ready")
        time.sleep(600)
    elif mode == "linger":
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        with open(argv[1], "w") as handle:
            json.dump({"pgid": os.getpgid(0)}, handle)
        _out(b"parent done")
    elif mode == "interleave":
        remaining, count = int(argv[1]), 0
        block = b"e" * 65536
        while remaining > 0:
            sys.stderr.buffer.write(block[:remaining])
            sys.stderr.buffer.flush()
            remaining -= len(block)
            if count % 10 == 0:
                _out(b"o" * 100_000)
            count += 1
        _out(b"end")
    elif mode == "escape":
        grandchild = os.fork()
        if grandchild == 0:
            os.setsid()
            time.sleep(60)
            os._exit(0)
        with open(argv[1], "w") as handle:
            json.dump({"grandchild": grandchild}, handle)
        _out(b"parent done")
    elif mode == "leak":
        stdin = sys.stdin.buffer.read().decode("utf-8")
        noise = "\x1b[2J\x1b]0;pwned title\x07\x1b[31mfatal:\x1b[0m \x9b1m"
        sys.stderr.write(f"{noise} {stdin} {os.environ[argv[1]]}\r\nlast\tline\x07\n")
        sys.stderr.flush()
        return 1
    elif mode == "close-stdout":
        with open(argv[1], "w") as handle:
            json.dump({"pid": os.getpid(), "pgid": os.getpgid(0)}, handle)
        _out(b"answer")
        os.close(1)
        time.sleep(1000)
    elif mode == "close-then-exit":
        _out(b"answer")
        os.close(1)
        time.sleep(0.2)
        os._exit(0)
    elif mode == "sleep":
        time.sleep(float(argv[1]))
        _out(b"woke")
    else:
        sys.stderr.write(f"unknown mode {mode}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
