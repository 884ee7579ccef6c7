# SPDX-License-Identifier: BSD-2-Clause
"""Simulated boards that stay up between commands: ``pcispy sim start|stop|status``.

A board in a slot keeps its registers, memories and trace from one command to the next;
so does a simulated board in a *session*: one simulator process (the cached Verilator
model running :mod:`pcispy.sim.session_bench`) that serves every ``--sim`` command of its
profile, bus width and seed until ``pcispy sim stop``, or until it has had no command for
its idle timeout. A command attaches to the session its options name and starts it when
none runs; only that first command pays for the simulator's start.

Sessions belong to one checkout of pcispy: :func:`sessions_root` is a folder of this
checkout's own (named after its path) under ``$PCISPY_SESSIONS`` (default: ``pcispy-UID``
in the system's temporary folder), so two checkouts never see, use or stop each other's
sessions, even with one ``PCISPY_SESSIONS``. Each session is a folder in it named after the
session (``ideal-32bit``, ``pci33-64bit-seed7``, or a name of the user's own: ``--session``):

- ``lock``, held by whoever starts, checks or clears the session; it goes with the folder.
- ``spec.json``, written by whoever starts it: profile, width, seed, the model and the
  hash of the pcispy sources it was built from, the process group of the simulator and
  its log. Present from the start until the session ends cleanly, so a ``spec.json``
  whose process is gone means the simulator died. A session whose sources are not this
  checkout's any more (pcispy was edited or updated since it started) is refused in one
  line naming `pcispy sim stop`: it would run the old board and the old commands.
- ``info.json`` and ``socket``, written by the bench once the board is enumerated.
- ``sim.log``, the simulator's output.

A simulator that died is reported in one line naming its log (kept beside the folder);
the session is then cleared, so the next command starts a fresh one. The simulator ends
with the process that started it (``kill -9`` of it too: :func:`end_with_parent`).

A command in a session answers ``{"accepted": true}`` as soon as the simulator takes it,
then its result. A client that has no acceptance within :data:`BUSY_NOTICE_S` says that
the session is busy with another command, and keeps waiting. A client that goes away
(Ctrl-C) ends its command in the simulator within a few thousand bus clocks
(:mod:`pcispy.sim.session_bench`), so the next command is served at once.

The command line imports this module whatever the command; what simulates the system (its
configuration, :mod:`pcispy.sim.launcher`, and its model, :mod:`pcispy.sim.model` and
:mod:`pcispy.sim.verilate`) loads when a session is started, checked or used. Checking a
running session's sources hashes files (:func:`pcispy.sim.model.generator_key`): a command
on a running session loads neither Amaranth nor cocotb; building a model loads Amaranth
and the gateware.
"""

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from pcispy.host.errors import PcispyError

__all__ = ["SessionSpec", "Session", "SessionDied", "sessions_root", "checkout_key", "attach",
           "start", "stop", "running", "run_feature", "DEFAULT_IDLE_TIMEOUT_S", "SESSIONS_ENV",
           "FRESH_ENV", "fresh_by_default", "session_name", "status", "read_message",
           "send_message", "end_with_parent", "BUSY_NOTICE_S", "build_with_progress"]

#: Where sessions live, a folder per checkout in it (default: ``pcispy-UID`` in the system's
#: temporary folder).
SESSIONS_ENV = "PCISPY_SESSIONS"
#: Set (to anything but "" or "0") to give every ``--sim`` command a fresh board, as
#: ``--fresh`` does: for scripts and test suites that want no state between commands.
FRESH_ENV = "PCISPY_FRESH_SIM"
#: A session with no command for this long ends by itself.
DEFAULT_IDLE_TIMEOUT_S = 30 * 60
#: How long a starting simulator may take to enumerate its board.
START_TIMEOUT_S = 300
#: Given to the session's simulator: its folder, and its idle timeout in seconds.
SESSION_ENV = "PCISPY_SESSION_DIR"
IDLE_TIMEOUT_ENV = "PCISPY_SESSION_IDLE_TIMEOUT"
#: The files of a session's folder (module docstring).
LOCK_NAME = "lock"
SPEC_NAME = "spec.json"
INFO_NAME = "info.json"
SOCKET_NAME = "socket"
LOG_NAME = "sim.log"
#: The longest message read from a session's socket.
MAX_MESSAGE_BYTES = 64 << 20
#: A Unix socket's path must fit ``sun_path`` (108 bytes on Linux, with its NUL).
MAX_SOCKET_PATH = 107
#: Seconds a command waits for its session to take it before saying the session is busy.
BUSY_NOTICE_S = 2.0


def read_message(connection):
    """One JSON line from ``connection`` (a dict), or None when it ends before one."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(1 << 16)
        if not chunk or len(data) > MAX_MESSAGE_BYTES:
            return None
        data += chunk
    return json.loads(data)


def send_message(connection, message):
    """Send ``message`` as one JSON line; False when the other side has gone."""
    try:
        connection.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        return False
    return True


class _Lines:
    """The JSON lines a connection brings, one at a time: bytes read past a line (the
    session may send its acceptance and its reply in one go) wait for the next call, and
    so do the bytes of a line a timeout cut short."""

    def __init__(self, connection):
        self.connection = connection
        self.data = b""

    def next(self):
        """The next message (a dict), or None when the connection ends before one."""
        while b"\n" not in self.data:
            chunk = self.connection.recv(1 << 16)
            if not chunk or len(self.data) > MAX_MESSAGE_BYTES:
                return None
            self.data += chunk
        line, _, self.data = self.data.partition(b"\n")
        return json.loads(line)


class SessionDied(PcispyError):
    """The session's simulator is gone without being stopped."""


def session_name(text):
    """``text`` if it can name a session (a folder): letters, digits, '-', '_', '.', not
    starting with '.'; else a :class:`PcispyError` saying so."""
    if not text or text.startswith(".") or len(text) > 40 or \
            not text.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise PcispyError(f"session name {text!r}: use up to 40 letters, digits, '-', '_' "
                          "and '.', not starting with '.'")
    return text


@dataclass(frozen=True)
class SessionSpec:
    """What a session simulates: host-bridge ``profile``, bus ``width``, ``seed``, and
    ``core``, the description file of the core in slot 0 (an absolute path; "" for
    pcispy's board); and its ``name`` (default: from those, so each combination has a
    session of its own; a core's sessions are named ``core-LABEL-...``)."""
    profile: str = "ideal"
    width: int = 32
    seed: int = 1
    name: str = ""
    core: str = ""

    def __post_init__(self):
        if self.core:
            object.__setattr__(self, "core", os.path.abspath(self.core))
        if not self.name:
            default = f"{self.profile}-{self.width}bit" + (
                f"-seed{self.seed}" if self.seed != 1 else "")
            if self.core:
                default = f"core-{self.description().label}-{default}"
            object.__setattr__(self, "name", default[:40])
        session_name(self.name)

    def description(self):
        """The :class:`~pcispy.sim.core_description.CoreDescription` of ``core`` (None for pcispy's
        board); a file that cannot be read or parsed is a :class:`PcispyError`."""
        if not self.core:
            return None
        # the description's reader loads only for a core: every command imports this module
        from pcispy.sim.core_description import CoreDescription
        try:
            return CoreDescription.load(self.core)
        except (OSError, ValueError, TypeError) as error:
            raise PcispyError(f"{self.core}: {error}") from None

    def describe(self):
        slot0 = f"core {os.path.basename(self.core)} in slot 0, " if self.core else ""
        return f"{slot0}profile {self.profile}, {self.width}-bit bus, seed {self.seed}"

    def same_board(self, other):
        """Whether ``other`` asks for this session's board. A spec without a core takes
        whatever slot 0 holds (a session named with ``--session``): the session's
        simulator refuses what needs pcispy's board itself."""
        return (self.profile, self.width, self.seed) == (other.profile, other.width,
                                                          other.seed) and \
            (not other.core or self.core == other.core)


def fresh_by_default():
    """True when :data:`FRESH_ENV` asks for a fresh board per command."""
    return os.environ.get(FRESH_ENV, "") not in ("", "0")


def checkout_key():
    """This checkout's name among the sessions folders: the last part of its path and a
    hash of the whole path (``wt-users-1a2b3c4d``)."""
    checkout = str(Path(__file__).resolve().parents[2])
    digest = hashlib.sha256(checkout.encode()).hexdigest()[:8]
    base = "".join(c if c.isalnum() or c in "-_." else "_"
                   for c in os.path.basename(checkout))[:20].lstrip(".")
    return f"{base}-{digest}" if base else digest


def sessions_root():
    """The folder that holds this checkout's sessions: its :func:`checkout_key` in
    :data:`SESSIONS_ENV` (default ``pcispy-UID`` in the system's temporary folder)."""
    base = os.environ.get(SESSIONS_ENV) or os.path.join(
        tempfile.gettempdir(), f"pcispy-{os.getuid()}")
    root = os.path.join(base, checkout_key())
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def end_with_parent():
    """Have Linux end this process (a simulator) when the process that started it ends,
    even by ``kill -9``: a simulator nobody can reach would run on, unseen. Nothing
    happens where ``prctl`` is missing."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)           # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent == 1 or not _pid_alive(parent):  # it ended before the request was made
        os._exit(1)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of ours that ended but was not reaped yet is a zombie: not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


class Session:
    """A session's folder and the simulator behind it (:func:`attach`, :func:`running`)."""

    def __init__(self, directory):
        self.directory = directory
        self.name = os.path.basename(directory)
        raw = _read_json(os.path.join(directory, SPEC_NAME)) or {}
        self.spec = SessionSpec(**raw["spec"]) if "spec" in raw else None
        self.pid = raw.get("pid")
        #: The :func:`~pcispy.sim.model.generator_key` of the model it runs.
        self.sources = raw.get("sources")
        self.started = raw.get("started")
        self.log = os.path.join(directory, LOG_NAME)

    @property
    def info(self):
        return _read_json(os.path.join(self.directory, INFO_NAME))

    def state(self):
        """"ready", "starting", "died" (its process is gone) or "gone" (no session)."""
        if self.pid is None:
            return "gone"
        if not _pid_alive(self.pid):
            return "died"
        info = self.info
        return "ready" if info and info.get("ready") else "starting"

    def request(self, request, *, timeout=None, busy_notice=None):
        """Send one request, return the reply (a dict). Raises :class:`SessionDied` when
        the simulator cannot be reached or goes away before it answers, and
        ``TimeoutError`` when ``timeout`` (seconds) passes first. A command (``"run"``)
        is first accepted; ``busy_notice()`` is called once when that takes more than
        :data:`BUSY_NOTICE_S` (the simulator is still busy with another command)."""
        path = os.path.join(self.directory, SOCKET_NAME)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            try:
                connection.connect(path)
            except (FileNotFoundError, ConnectionRefusedError):
                raise self._died("does not answer") from None
            send_message(connection, request)
            try:
                reply = self._reply(connection, timeout, busy_notice)
            except socket.timeout:
                raise TimeoutError(f"session {self.name} is busy") from None
            except (OSError, ValueError):
                reply = None
        if reply is None:
            raise self._died("ended in the middle of the command")
        return reply

    @staticmethod
    def _reply(connection, timeout, busy_notice):
        """The reply after the acceptance a command gets first (see :meth:`request`)."""
        lines = _Lines(connection)
        if busy_notice is not None:
            connection.settimeout(BUSY_NOTICE_S if timeout is None else
                                  min(timeout, BUSY_NOTICE_S))
            try:
                reply = lines.next()
            except socket.timeout:
                if timeout is not None and timeout <= BUSY_NOTICE_S:
                    raise
                busy_notice()
                connection.settimeout(None if timeout is None else timeout - BUSY_NOTICE_S)
                reply = lines.next()
            if reply is None or "accepted" not in reply:
                return reply
        connection.settimeout(timeout)
        reply = lines.next()
        while reply is not None and "accepted" in reply:
            reply = lines.next()
        return reply

    def _died(self, how):
        """Clear a session whose simulator is gone; the error that reports it."""
        # Give a simulator that just died a moment to be seen gone.
        for _ in range(50):
            if self.pid is None or not _pid_alive(self.pid):
                break
            time.sleep(0.1)
        else:
            self.kill()
        with _locked(self.directory):
            kept = self.discard(keep_log=True)
        return SessionDied(f"the simulated board (session {self.name}) {how}: its simulator "
                           f"died; its log is {kept}; the next command starts a fresh one")

    def kill(self):
        """End the simulator's whole process group (the wrapper and the simulator)."""
        if self.pid is not None and _pid_alive(self.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGTERM)
            for _ in range(50):
                if not _pid_alive(self.pid):
                    return
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def discard(self, *, keep_log=False):
        """Remove the session's folder; with ``keep_log``, first move its log beside the
        folder (``NAME-died-TIME.log``) and return that path."""
        kept = None
        if keep_log and os.path.exists(self.log):
            kept = os.path.join(os.path.dirname(self.directory),
                                f"{self.name}-died-{time.strftime('%Y%m%d-%H%M%S')}.log")
            os.replace(self.log, kept)
        for entry in (SOCKET_NAME, INFO_NAME, INFO_NAME + ".tmp", SPEC_NAME, LOG_NAME,
                      LOCK_NAME):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.directory, entry))
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)
        return kept


#: The session folders whose lock this process holds (a lock is taken once per process).
_HELD = set()


@contextlib.contextmanager
def _locked(directory):
    """Hold the lock of the session in ``directory`` (``lock`` in it): one process at a
    time starts, checks or clears it. The lock goes with the folder: a folder left without a
    ``spec.json`` (no session, or one that failed to start) is removed before the lock
    is let go, and a process that waited on the lock of a folder removed meanwhile takes
    the lock of the folder made after it."""
    directory = os.path.abspath(directory)
    if directory in _HELD:
        yield
        return
    path = os.path.join(directory, LOCK_NAME)
    while True:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:
            continue                       # the folder went between the two calls
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(descriptor).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(descriptor)
    _HELD.add(directory)
    try:
        yield
    finally:
        _HELD.discard(directory)
        if not os.path.exists(os.path.join(directory, SPEC_NAME)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        os.close(descriptor)


def running():
    """Every session with a folder, by name (:class:`Session`; some may have died)."""
    root = sessions_root()
    return [Session(os.path.join(root, entry)) for entry in sorted(os.listdir(root))
            if os.path.isfile(os.path.join(root, entry, SPEC_NAME))]


def _session(name):
    return Session(os.path.join(sessions_root(), name))


def _check_live(session):
    """``session`` if it runs (waiting while it starts), None if there is none; raises
    :class:`SessionDied` when its simulator is gone."""
    state = session.state()
    if state == "gone":
        return None
    if state == "died":
        raise session._died("stopped answering")
    if state == "starting":
        _wait_ready(session)
    return session


def _wait_ready(session, process=None):
    """Wait until the session's bench has enumerated the board and listens."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = session.info
        if info and "failed" in info:
            session.kill()
            session.discard()
            raise PcispyError(info["failed"])
        if info and info.get("ready"):
            return
        if (process.poll() is not None) if process else not _pid_alive(session.pid):
            raise session._died("did not start")
        time.sleep(0.05)
    session.kill()
    raise session._died(f"did not start within {START_TIMEOUT_S} s")


def start(spec, *, idle_timeout_s=DEFAULT_IDLE_TIMEOUT_S, verbose=False):
    """Start the session ``spec`` describes (or return the one of that name already
    running, refusing one that simulates another board); return its :class:`Session`
    and whether this call started it."""
    with _locked(_session(spec.name).directory):
        session = _check_live(_session(spec.name))
        if session is not None:
            _refuse_other_board(session, spec)
            _refuse_other_sources(session)
            return session, False
        directory = os.path.join(sessions_root(), spec.name)
        if len(os.path.join(directory, SOCKET_NAME).encode()) > MAX_SOCKET_PATH:
            raise PcispyError(f"the session folder {directory} is too long a path for a "
                              f"socket; point {SESSIONS_ENV} at a shorter one")
        os.makedirs(directory, mode=0o700, exist_ok=True)
        print(f"pcispy: starting a simulated board (session {spec.name}: "
              f"{spec.describe()}; `pcispy sim stop` ends it)", file=sys.stderr)
        # the system's configuration loads with a session (the module's docstring)
        from pcispy.sim import model as system_model
        from pcispy.sim.launcher import bench_env, machine_config
        config = machine_config(spec.profile, width=spec.width, core=spec.description())
        try:
            model = build_with_progress(config)
        except (ValueError, RuntimeError) as error:
            # A core that cannot sit on this bus; a Verilator build that failed (the error
            # names its log).
            raise PcispyError(str(error)) from None
        env = dict(os.environ)
        env.update(bench_env(config, profile=spec.profile, seed=spec.seed))
        env.update({SESSION_ENV: directory, IDLE_TIMEOUT_ENV: str(idle_timeout_s)})
        log = os.path.join(directory, LOG_NAME)
        with open(log, "w") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", "pcispy.sim.session", str(model.build_dir),
                 model.toplevel], env=env, stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True)
        with open(os.path.join(directory, SPEC_NAME), "w") as f:
            json.dump({"spec": asdict(spec), "pid": process.pid, "model": str(model.build_dir),
                       "sources": system_model.generator_key(config), "started": time.time(),
                       "idle_timeout_s": idle_timeout_s}, f)
        session = Session(directory)
        if verbose:
            print(f"pcispy: the session's simulator logs to {log}", file=sys.stderr)
        _wait_ready(session, process)
        return session, True


def build_with_progress(config):
    """The model of ``config``, built (with its progress on stderr) if it is not yet."""
    # the model loads with a session (the module's docstring)
    from pcispy.sim import build_progress, model as system_model, verilate
    with build_progress.reporting(config.name, verilate.BUILD_ROOT):
        return system_model.build_system(config)


def _refuse_other_board(session, spec):
    if session.spec is not None and not session.spec.same_board(spec):
        raise PcispyError(f"session {session.name} simulates {session.spec.describe()}, not "
                          f"{spec.describe()}: stop it (pcispy sim stop {session.name}) or "
                          "name another session (--session)")


def _refuse_other_sources(session):
    """Refuse a session whose simulator runs pcispy sources other than this checkout's
    (edited or updated since it started): its board and commands are the old ones."""
    spec = session.spec
    if spec is None or session.sources is None:
        return
    # the system's configuration and model load with a session (the module's docstring)
    from pcispy.sim import model as system_model
    from pcispy.sim.launcher import machine_config
    if session.sources != system_model.generator_key(machine_config(
            spec.profile, width=spec.width, core=spec.description())):
        since = time.strftime("%H:%M", time.localtime(session.started)) \
            if session.started else "it started"
        raise PcispyError(f"session {session.name} runs the simulated board of pcispy as it "
                          f"was at {since}; pcispy changed since: `pcispy sim stop "
                          f"{session.name}` ends it, and the next command starts it on the "
                          "current sources")


def attach(spec, *, verbose=False):
    """The running session ``spec`` names, started if none runs."""
    with _locked(_session(spec.name).directory):
        session = _check_live(_session(spec.name))
    if session is not None:
        _refuse_other_board(session, spec)
        _refuse_other_sources(session)
        return session
    return start(spec, verbose=verbose)[0]


def stop(session):
    """End ``session``: ask its simulator to stop, kill it if it does not; return the
    simulator's last status (None when it had died or did not answer) and, for one that
    had died, where its log is now (else None)."""
    with _locked(session.directory):
        state = session.state()
        reply = None
        if state in ("ready", "starting"):
            with contextlib.suppress(PcispyError, TimeoutError, OSError):
                reply = session.request({"op": "stop"}, timeout=30)
            for _ in range(100):
                if not _pid_alive(session.pid):
                    break
                time.sleep(0.05)
            session.kill()
        return reply, session.discard(keep_log=state == "died")


def status(session):
    """``session``'s state and figures: ``{"name", "state", "spec", "pid", "log",
    "commands", "cycle", "up_s", "idle_s", "idle_timeout_s"}`` (figures None while it is
    busy with a command or not ready)."""
    state = session.state()
    row = {"name": session.name, "state": state,
           "spec": asdict(session.spec) if session.spec else None,
           "pid": session.pid, "log": session.log, "commands": None, "cycle": None,
           "up_s": None, "idle_s": None, "idle_timeout_s": None}
    if state == "ready":
        try:
            row.update(session.request({"op": "status"}, timeout=2))
        except TimeoutError:
            row["state"] = "busy"
        except SessionDied:
            row["state"] = "died"
    return row


def run_feature(feature, arguments, spec, *, verbose=False):
    """Run a host feature (a function or its ``"module:function"`` name) on the
    session's board (started if none runs); return its result, as
    :func:`pcispy.sim.launcher.run_feature` does for a fresh board."""
    # the launcher loads with a session (the module's docstring)
    from pcispy.sim.launcher import feature_path
    session = attach(spec, verbose=verbose)

    def busy():
        print(f"pcispy: session {session.name} is busy with another command; waiting for it "
              f"(`pcispy sim stop {session.name}` ends it)", file=sys.stderr)
    outcome = session.request({"op": "run", "feature": feature_path(feature),
                               "arguments": arguments or {}}, busy_notice=busy)
    if "failed" in outcome:
        raise PcispyError(f"the simulation failed ({outcome['failed']}); see {session.log}")
    if "error" in outcome:
        raise PcispyError(outcome["error"])
    outcome["result"].setdefault("checker", outcome["checker"])
    return outcome["result"]


def _serve(build_dir, toplevel):
    """The session's process: run the session bench on the model until it ends. A clean
    end (stopped, idle) clears the session; a failure leaves ``spec.json`` behind, which
    marks the session as died."""
    directory = os.environ[SESSION_ENV]
    # the model loads with a session (the module's docstring)
    from pcispy.sim.verilate import Model, SimulationFailed
    try:
        Model(build_dir, toplevel).run("pcispy.sim.session_bench", "serve")
    except SimulationFailed as failure:
        print(f"pcispy session: the simulator failed: {failure}", file=sys.stderr)
        return 1
    with _locked(directory):
        Session(directory).discard()
    return 0


if __name__ == "__main__":
    sys.exit(_serve(*sys.argv[1:3]))
