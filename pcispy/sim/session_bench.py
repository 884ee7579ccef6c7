# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb bench of a simulated-board session: one simulated system that serves
command after command (:mod:`pcispy.sim.session` starts it and talks to it).

It starts and enumerates the system once, then waits on the session's Unix socket. Each
connection carries one request, a JSON line, and gets one JSON line back:

- ``{"op": "run", "feature": "module:function", "arguments": {...}}``: answered at once
  with ``{"accepted": true}``, then the feature runs on the board as it is
  (:func:`~pcispy.sim.feature_bench.run_on_board`); the monitors' evidence is cleared
  first, so the reply's checker report covers this command's bus traffic only. While it
  runs, the bench looks every :data:`HANGUP_CHECK_CLOCKS` bus clocks whether the client is
  still there: one that went away (Ctrl-C) ends the feature at its next access to the
  board or within its wait (:class:`~pcispy.sim.transport.SimTransport`'s ``hangup``), as
  Ctrl-C ends a feature on hardware; a request whose client left before it was taken is
  not run at all. With another core than pcispy's board in slot 0, only the features that
  need nothing but slot 0's PCI interface run
  (:data:`~pcispy.sim.session_command.SLOT0_FEATURES`); any other is refused in one line.
- ``{"op": "status"}``: bus time, commands served, idle time.
- ``{"op": "stop"}``: the reply, then the simulator ends.

While it waits nothing advances: the simulator is paused in this Python code, so the bus
time a command sees continues where the previous command left it. With no request for
the session's idle timeout, it ends by itself. ``info.json`` in the session folder says
it is ready (and how to reach it); the bench removes it and the socket when it ends.
"""

import asyncio
import json
import os
import socket
import sys
import time
import traceback

import select

import cocotb
from cocotb.triggers import Event, Timer

from pcispy.host.errors import PcispyError
from pcispy.sim.api import SimSystem
from pcispy.sim.feature_bench import run_on_board
from pcispy.sim.session import (IDLE_TIMEOUT_ENV, INFO_NAME, SESSION_ENV, SOCKET_NAME,
                                end_with_parent, read_message, send_message)
from pcispy.sim.session_command import SLOT0_FEATURES
from pcispy.sim.system import slot0_name

__all__ = ["HANGUP_CHECK_CLOCKS"]

#: Bus clocks between two looks at whether a command's client is still there (a look is
#: one poll of its socket: at 30,000 clocks a second of a slow simulation, 70 ms).
HANGUP_CHECK_CLOCKS = 2000


def _hung_up(connection):
    """Whether the client at the other end of ``connection`` has gone (closed it)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and not connection.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


class _Client:
    """The client of a command, as the transport's ``hangup``: :meth:`is_set` looks at its
    socket (a poll, microseconds: the transport asks before every access, also where no
    bus time passes), :meth:`wait` ends once it has gone (:meth:`watch` looks every
    :data:`HANGUP_CHECK_CLOCKS` clocks while bus time passes)."""

    def __init__(self, connection):
        self.connection = connection
        self.gone = Event()

    def is_set(self):
        if not self.gone.is_set() and _hung_up(self.connection):
            self.gone.set()
        return self.gone.is_set()

    def wait(self):
        return self.gone.wait()

    async def watch(self, period_ns):
        while not self.is_set():
            await Timer(period_ns * HANGUP_CHECK_CLOCKS, unit="ns")


async def _run_watched(system, bars, name, request, connection):
    """Run the request's feature while watching its client; the reply (None: the client
    went away, and the feature ended at its next access to the board)."""
    hangup = _Client(connection)
    watcher = cocotb.start_soon(hangup.watch(system.period_ns))
    try:
        refused = _refusal(system, name, request["feature"])
        reply = refused or await run_on_board(
            system, bars, request["feature"], request.get("arguments") or {},
            session=name, hangup=hangup)
    except asyncio.CancelledError:
        reply = None                    # the client's Ctrl-C: nobody waits for a reply
    except Exception as error:          # a bug: say so, keep the board
        traceback.print_exc()
        reply = {"failed": f"{type(error).__name__}: {error}"}
    watcher.cancel()
    return None if hangup.is_set() else reply


def _write_info(directory, info):
    """Write info.json whole (a reader never sees half of it)."""
    path = os.path.join(directory, INFO_NAME)
    with open(path + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(path + ".tmp", path)


def _refusal(system, name, feature):
    """The reply refusing ``feature`` on this session, or None when it can run: with
    another core in slot 0, what talks to pcispy's board (its registers, spy, exerciser)
    cannot."""
    if system.config.core is None or feature in SLOT0_FEATURES:
        return None
    return {"error": f"session {name} has the core {slot0_name(system.config)} in slot 0, "
                     "not pcispy's board, which this command needs; for the core use "
                     f"`pcispy --session {name} sim config|read|write`",
            "kind": "PcispyError", "checker": None}


@cocotb.test()
async def serve(dut):
    """Start the system and serve requests until stopped or idle for too long."""
    end_with_parent()
    directory = os.environ[SESSION_ENV]
    idle_timeout = float(os.environ[IDLE_TIMEOUT_ENV])
    system = SimSystem(dut)
    try:
        await system.start()
        bars = await system.enumerate_board()
    except PcispyError as error:
        _write_info(directory, {"failed": str(error)})
        return
    path = os.path.join(directory, SOCKET_NAME)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    started = time.time()
    _write_info(directory, {"ready": True, "pid": os.getpid(), "started": started,
                            "idle_timeout_s": idle_timeout, "profile": system.profile_name,
                            "bus_width": system.config.width, "seed": system.seed})
    name = os.path.basename(directory)
    commands, last = 0, started
    try:
        while True:
            # Blocking here pauses the simulator: no bus clock passes between commands.
            # (A timeout of 0 would make accept non-blocking: it then raises another error.)
            listener.settimeout(max(0.001, last + idle_timeout - time.time()))
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                print(f"pcispy session {name}: idle for {idle_timeout:g} s, ending",
                      file=sys.stderr)
                return
            with connection:
                connection.settimeout(None)
                try:
                    request = read_message(connection)
                except (OSError, ValueError):
                    request = None
                if request is None:
                    continue
                op = request.get("op")
                if op == "stop":
                    send_message(connection, {"stopped": True, "commands": commands,
                                            "cycle": await system.cycle(),
                                            "up_s": time.time() - started})
                    return
                if op == "status":
                    send_message(connection, {"commands": commands,
                                              "cycle": await system.cycle(),
                                            "up_s": time.time() - started,
                                            "idle_s": time.time() - last,
                                            "idle_timeout_s": idle_timeout})
                elif op == "run":
                    if not send_message(connection, {"accepted": True}) or \
                            _hung_up(connection):
                        continue                # its client left while it waited
                    commands += 1
                    await system.clear_checker()
                    reply = await _run_watched(system, bars, name, request, connection)
                    if reply is not None:
                        send_message(connection, reply)
                    else:
                        print(f"pcispy session {name}: the client of "
                              f"{request['feature']} went away; its command ended",
                              file=sys.stderr)
                    last = time.time()          # (a status request is not a command)
                else:
                    send_message(connection, {"failed": f"unknown request {op!r}"})
    finally:
        listener.close()
        for leftover in (path, os.path.join(directory, INFO_NAME)):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass
