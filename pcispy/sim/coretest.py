# SPDX-License-Identifier: BSD-2-Clause
"""A standard set of checks for any target core in slot 0 (``pcispy sim-test CORE``).

Each check drives the core through the host bridge and passes or fails on what it saw;
after each one both monitors' evidence (the protocol checker's pin rules, the resolver's
driver rules) is read and cleared, so every row of the table says which bus rules that
check's traffic broke. The checks assume nothing of the core but the PCI rules:

- ``present``: the Vendor ID of function 0 reads as something else than 0xFFFF;
- ``enumerates``: enumeration finds it; every BAR's size is a power of two and its
  assigned address aligned to it;
- ``config_readback``: the Command register keeps Memory Space Enable (when the core has
  a memory BAR) as enumeration wrote it, and the header type is 0;
- ``devsel_timing``: the Status register's DEVSEL timing is fast, medium or slow (not 11);
- ``absent_functions``: functions 1..7 do not answer when the header says single-function;
- ``memory_read``: a single read at each memory BAR completes without an abort;
- ``memory_write_read``: a DWORD written at each memory BAR's first word reads back
  (skipped with ``writes=False``: for windows whose words are registers, not memory);
- ``memory_burst``: a 4-phase burst write and read of the first 16 bytes of each memory
  BAR moves the data (likewise);
- ``reset``: after RST# in mid-run the core is unconfigured (Command reads 0) and enumerates
  again.

Each row also keeps the first violations its traffic caused (:data:`LOG_DEPTH`, in
clock order): the cycle (clocks since the model started, the count the waves show too),
the rule, the line for a driver rule, and the agents (the master of the transaction for a
pin rule; agents A and B of a driver rule, slot 0 by the core's name).

:func:`run_core_checks` builds the model and runs them (the bench runs inside the
simulator: ``pcispy.sim.coretest``, cocotb test ``core_checks``); from pytest,
``assert_core_passes("my_core.json")`` fails with the table when a check failed. With
``waves="fst"`` or ``"vcd"`` the run records every signal of the system (the resolved
bus, and each agent's output enables as the resolver's ``<line>_oe`` inputs, bit k =
agent k of :func:`~pcispy.sim.system.driver_names`) for GTKWave or Surfer.
"""

import json
import os

import cocotb

from pcispy.sim.bfm.resolver import LOG_DEPTH as RESOLVER_LOG_DEPTH

__all__ = ["CHECKS", "run_core_checks", "assert_core_passes", "format_table", "RESULT_ENV",
           "WRITES_ENV", "LOG_DEPTH", "violation_log", "waves_target"]

#: Where the bench writes its rows (a JSON file).
RESULT_ENV = "PCISPY_CORETEST_RESULT"
#: "0" skips the checks that write into the core's memory windows.
WRITES_ENV = "PCISPY_CORETEST_WRITES"

_MEMORY_WRITE_CHECKS = ("memory_write_read", "memory_burst")

#: Violations a row keeps: as many as each monitor logs after a clear (the checker's log is
#: as deep as the resolver's).
LOG_DEPTH = RESOLVER_LOG_DEPTH


class _Skip(Exception):
    """A check that does not apply to this core."""


async def _present(system, state):
    from pcispy.sim.system import BOARD_SLOT
    ids = (await system.host.config_read(BOARD_SLOT, 0x00)).value
    assert ids is not None and ids & 0xFFFF != 0xFFFF, f"Vendor ID reads {ids!r}"
    return f"vendor {ids & 0xFFFF:#06x} device {ids >> 16:#06x}"


async def _enumerates(system, state):
    from pcispy.sim.system import BOARD_SLOT
    found = [f for f in await system.enumerate() if f.slot == BOARD_SLOT]
    assert found, "enumeration found nothing in slot 0"
    state["function"] = function = found[0]
    for bar in function.bars:
        assert bar.size & (bar.size - 1) == 0, f"BAR{bar.index}: size {bar.size:#x}"
        assert bar.address % bar.size == 0, f"BAR{bar.index}: address {bar.address:#x}"
    return ", ".join(f"BAR{b.index} {b.kind} {b.size:#x} at {b.address:#x}"
                     for b in function.bars) or "no BAR"


def _function(state):
    if "function" not in state:
        raise _Skip("not enumerated")
    return state["function"]


async def _config_readback(system, state):
    from pcispy.sim.system import BOARD_SLOT
    function = _function(state)
    memory = any(bar.kind == "memory" for bar in function.bars)
    command = (await system.host.config_read(BOARD_SLOT, 0x04)).value & 0xFFFF
    if memory:
        assert command & 0b10, f"Command {command:#06x}: Memory Space Enable not kept"
    header = (await system.host.config_read(BOARD_SLOT, 0x0C)).value >> 16 & 0x7F
    assert header == 0, f"header type {header:#x}, not 0"
    return f"Command {command:#06x}"


async def _devsel_timing(system, state):
    from pcispy.sim.system import BOARD_SLOT
    status = (await system.host.config_read(BOARD_SLOT, 0x04)).value >> 16
    timing = status >> 9 & 3
    assert timing != 3, f"Status {status:#06x}: DEVSEL timing 11 is reserved"
    return ("fast", "medium", "slow")[timing]


async def _absent_functions(system, state):
    from pcispy.sim.bfm.initiator import Status
    from pcispy.sim.system import BOARD_SLOT
    header = (await system.host.config_read(BOARD_SLOT, 0x0C)).value >> 16 & 0xFF
    if header & 0x80:
        raise _Skip("a multi-function device")
    answered = []
    for function in range(1, 8):
        result = await system.host.config_read(BOARD_SLOT, 0x00, function=function)
        if result.status == Status.OK and result.value & 0xFFFF != 0xFFFF:
            answered.append(function)
    assert not answered, f"functions {answered} answer on a single-function device"
    return "functions 1-7 absent"


def _memory_bars(state):
    bars = [bar for bar in _function(state).bars if bar.kind == "memory"]
    if not bars:
        raise _Skip("no memory BAR")
    return bars


async def _memory_read(system, state):
    for bar in _memory_bars(state):
        result = await system.host.mem_read(bar.address, 4)
        assert result.ok, f"BAR{bar.index}: {result.status.name}"
    return f"latency {result.latency} clocks"


async def _memory_write_read(system, state):
    for bar in _memory_bars(state):
        word = (0x5A00_00A5 | bar.index << 8).to_bytes(4, "little")
        wrote = await system.host.mem_write(bar.address, word)
        assert wrote.ok, f"BAR{bar.index}: write {wrote.status.name}"
        back = await system.host.mem_read(bar.address, 4)
        assert back.ok and back.data == word, f"BAR{bar.index}: read {back.data!r}"
    return "read back"


async def _memory_burst(system, state):
    data = bytes(range(0x10, 0x20))
    for bar in _memory_bars(state):
        if bar.size < len(data):
            raise _Skip(f"BAR{bar.index} smaller than 16 bytes")
        wrote = await system.host.mem_write(bar.address, data, burst=4)
        assert wrote.ok and wrote.dwords == 4, f"BAR{bar.index}: write {wrote}"
        back = await system.host.mem_read(bar.address, len(data), burst=4)
        assert back.ok and back.data == data, f"BAR{bar.index}: read {back.data!r}"
    return f"{back.transactions} transaction(s), {back.clocks} clocks"


async def _reset(system, state):
    from pcispy.sim.system import BOARD_SLOT
    await system.pulse_reset()
    command = (await system.host.config_read(BOARD_SLOT, 0x04)).value & 0xFFFF
    assert command & 0b111 == 0, f"Command {command:#06x} after RST#"
    state.pop("function", None)
    await _enumerates(system, state)
    return "unconfigured, enumerated again"


#: ``(name, check)`` in the order they run.
CHECKS = (
    ("present", _present), ("enumerates", _enumerates),
    ("config_readback", _config_readback), ("devsel_timing", _devsel_timing),
    ("absent_functions", _absent_functions), ("memory_read", _memory_read),
    ("memory_write_read", _memory_write_read), ("memory_burst", _memory_burst),
    ("reset", _reset),
)


def _violations(report):
    """The rule names of a checker report (pin rules and driver rules)."""
    return sorted(report["violations"]) + sorted(report["drivers"])


def violation_log(report, depth=LOG_DEPTH):
    """The first ``depth`` violations of a checker report (both monitors' logs) in clock
    order: ``{"cycle", "rule", "line", "agents"}`` (``line`` "" for a pin rule)."""
    entries = [{"cycle": entry["cycle"], "rule": rule, "line": "",
                "agents": [entry["master"]] if entry["master"] else []}
               for entry in report["log"] for rule in entry["rules"]]
    entries += [{"cycle": entry["cycle"], "rule": entry["rule"], "line": entry["line"],
                 "agents": [a for a in (entry["agent_a"], entry["agent_b"]) if a]}
                for entry in report["driver_log"]]
    entries.sort(key=lambda entry: entry["cycle"])
    return entries[:depth]


async def _run_checks(system, writes):
    rows = []
    state = {}
    for name, check in CHECKS:
        row = {"check": name, "result": "pass", "detail": "", "rules": [], "log": []}
        try:
            if not writes and name in _MEMORY_WRITE_CHECKS:
                raise _Skip("writes disabled")
            row["detail"] = await check(system, state) or ""
        except _Skip as why:
            row.update(result="skip", detail=str(why))
        except AssertionError as failure:
            # The first line: cocotb's assertion rewriting appends the expression after it.
            row.update(result="fail", detail=(str(failure) or "assertion failed").splitlines()[0])
        report = await system.checker_report()
        row["rules"] = _violations(report)
        row["log"] = violation_log(report)
        if row["rules"] and row["result"] == "pass":
            row["result"] = "fail"
        await system.clear_checker()
        rows.append(row)
    return rows


@cocotb.test()
async def core_checks(dut):
    """Every check of :data:`CHECKS` on slot 0; rows to the file RESULT_ENV names."""
    from pcispy.sim.api import SimSystem
    system = await SimSystem(dut).start()
    rows = await _run_checks(system, os.environ.get(WRITES_ENV, "1") != "0")
    with open(os.environ[RESULT_ENV], "w") as out:
        json.dump(rows, out)


def waves_target(waves, path=None, label="core"):
    """``(format, file, note)`` for a run asked to record ``waves`` ("fst"/"vcd") into
    ``path`` (default ``<label>.<format>`` in the current folder): FST falls back to VCD
    (the file's suffix too) where Verilator's FST writer cannot be built, ``note`` saying
    why (else None)."""
    from pathlib import Path
    from pcispy.sim.verilate import fst_missing
    if waves not in ("fst", "vcd"):
        raise ValueError(f"waves: 'fst' or 'vcd', not {waves!r}")
    path = Path(path or f"{label}.{waves}")
    note = None
    if waves == "fst" and fst_missing():
        note = f"{fst_missing()}; recording VCD instead"
        waves = "vcd"
        if path.suffix == ".fst":
            path = path.with_suffix(".vcd")
    return waves, path.resolve(), note


def run_core_checks(core, *, profile="ideal", seed=1, width=32, writes=True, log_file=None,
                    waves=None, waves_file=None):
    """Build (or reuse) the model with ``core`` (a :class:`~pcispy.sim.core.CoreDescription`
    or a path to one) in slot 0 and run :data:`CHECKS`; return the rows
    (``{"check", "result": "pass"/"fail"/"skip", "detail", "rules", "log"}``).
    ``waves`` ("fst" or "vcd") records the run into ``waves_file`` (a model of its own;
    :func:`waves_target` says where and falls back to VCD when FST cannot be built)."""
    import tempfile
    from pcispy.sim.launcher import bench_env
    from pcispy.sim.core import CoreDescription
    from pcispy.sim.system import SystemConfig, build_system
    if not isinstance(core, CoreDescription):
        core = CoreDescription.load(core)
    config = SystemConfig(width=width, core=core)
    trace = None
    if waves is not None:
        waves, trace, _ = waves_target(waves, waves_file, core.label)
    model = build_system(config, waves=waves)
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "rows.json")
        env = bench_env(config, profile=profile, seed=seed)
        env.update({RESULT_ENV: result, WRITES_ENV: "1" if writes else "0"})
        model.run("pcispy.sim.coretest", "core_checks", env=env, log_file=log_file,
                  waves=trace or False)
        with open(result) as rows:
            return json.load(rows)


def format_table(rows):
    """The rows as a plain-text table, one line per check, then the violations each
    check's traffic caused (cycle, rule, line, agents), if any."""
    broken = [", ".join(row["rules"]) or "-" for row in rows]
    wide = max([24, *map(len, broken)])
    lines = [f"{'check':<18} {'result':<6} {'rules broken':<{wide}} detail"]
    for row, rules in zip(rows, broken):
        lines.append(f"{row['check']:<18} {row['result']:<6} {rules:<{wide}} {row['detail']}")
    logged = [(row["check"], entry) for row in rows for entry in row.get("log", ())]
    if logged:
        lines += ["", f"violations (the first {LOG_DEPTH} of each check; cycle = clocks since "
                  "the model started):",
                  f"{'check':<18} {'cycle':>8}  {'rule':<24} {'line':<7} agents"]
        for check, entry in logged:
            agents = ", ".join(entry["agents"]) or "-"
            lines.append(f"{check:<18} {entry['cycle']:>8}  {entry['rule']:<24} "
                         f"{entry['line'] or '-':<7} {agents}")
    return "\n".join(lines) + "\n"


def assert_core_passes(core, **options):
    """:func:`run_core_checks` (same arguments), failing with the table when a check
    failed; returns the rows."""
    rows = run_core_checks(core, **options)
    assert not any(row["result"] == "fail" for row in rows), "\n" + format_table(rows)
    return rows
