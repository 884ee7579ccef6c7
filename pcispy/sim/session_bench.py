# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb bench of a simulated-board session: one simulated system that serves
command after command (:mod:`pcispy.sim.session` starts it and talks to it).

It starts and enumerates the system once, then waits on the session's Unix socket. Each
connection carries one request, a JSON line, and gets one JSON line back:

- ``{"op": "run", "feature": "module:function", "arguments": {...}}``: the feature runs
  on the board as it is (:func:`~pcispy.sim.feature_bench.run_on_board`); the monitors'
  evidence is cleared first, so the reply's checker report covers this command's bus
  traffic only. With another core than pcispy's board in slot 0, only the features that
  need nothing but slot 0's PCI interface run
  (:data:`~pcispy.sim.session_command.SLOT0_FEATURES`); any other is refused in one line.
- ``{"op": "status"}``: bus time, commands served, idle time.
- ``{"op": "stop"}``: the reply, then the simulator ends.

While it waits nothing advances: the simulator is paused in this Python code, so the bus
time a command sees continues where the previous command left it. With no request for
the session's idle timeout, it ends by itself. ``info.json`` in the session folder says
it is ready (and how to reach it); the bench removes it and the socket when it ends.
"""

import json
import os
import socket
import sys
import time
import traceback

import cocotb

from pcispy.host.errors import PcispyError
from pcispy.sim.api import SimSystem
from pcispy.sim.feature_bench import run_on_board
from pcispy.sim.session import (IDLE_TIMEOUT_ENV, INFO_NAME, SESSION_ENV, SOCKET_NAME,
                                read_message, send_message)
from pcispy.sim.session_command import SLOT0_FEATURES
from pcispy.sim.system import slot0_name

__all__ = []


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
                    commands += 1
                    await system.clear_checker()
                    try:
                        refused = _refusal(system, name, request["feature"])
                        reply = refused or await run_on_board(
                            system, bars, request["feature"], request.get("arguments") or {},
                            session=name)
                    except Exception as error:      # a bug: say so, keep the board
                        traceback.print_exc()
                        reply = {"failed": f"{type(error).__name__}: {error}"}
                    send_message(connection, reply)
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
