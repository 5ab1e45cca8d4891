"""SIGTERM stops `kb serve` whatever a request is doing.

Python runs a signal handler only when the main thread gets the GIL back, and C code that
holds it (a regular expression backtracking for minutes, a parser) keeps the handler, and any
thread that would end the process, from running. The kernel-level part of CPython's handler
still runs: it writes the signal's number to the wakeup fd (`signal.set_wakeup_fd`). That fd
is a pipe to a tiny watchdog process which, once SIGINT or SIGTERM comes through, gives the
server its grace period and then ends it with SIGKILL. The pipe closing (the server gone)
ends the watchdog.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

# Runs with `python -I -S`: no site, no kb imports, a few ms to start.
_WATCHDOG = r"""
import os, select, signal, sys, time
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)  # a Ctrl-C to the process group is the server's
server, grace = int(sys.argv[1]), float(sys.argv[2])
stops = {int(signal.SIGINT), int(signal.SIGTERM)}
while True:
    data = os.read(0, 64)
    if not data:
        sys.exit(0)  # the server ended
    if stops.intersection(data):
        break
deadline = time.monotonic() + grace
while (left := deadline - time.monotonic()) > 0:
    if select.select([0], [], [], left)[0] and not os.read(0, 64):
        sys.exit(0)  # it stopped within its grace period
if os.getppid() == server:
    os.write(2, b"kb serve: stopped (a request was still running)\n")
    os.kill(server, signal.SIGKILL)
"""


def start_stop_watchdog(grace_s: float) -> subprocess.Popen | None:
    """End this process `grace_s` after SIGINT/SIGTERM if it has not ended by itself. Call
    from the main thread, before serving; None where it cannot run (not the main thread)."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread (in-process tests): nothing to guard
        os.close(read)
        os.close(write)
        return None
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(grace_s)],
            stdin=read,
            stdout=subprocess.DEVNULL,
        )
    except OSError:
        signal.set_wakeup_fd(-1)
        os.close(write)
        return None
    finally:
        os.close(read)
    return process
