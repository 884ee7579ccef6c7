# SPDX-License-Identifier: BSD-2-Clause
"""A standard set of checks for any PCI core in slot 0 (``pcispy sim-test CORE``).

Each check drives the core through the host bridge and passes, warns or fails on what it
saw; after each one both monitors' evidence (the protocol checker's pin rules, the
resolver's driver rules) is read and cleared, so every row says which bus rules that
check's traffic broke and how often. The checks assume nothing of the core but the PCI
rules and what its description says:

- ``present``: the Vendor ID of function 0 reads as something else than 0xFFFF;
- ``enumerates``: enumeration finds it; every BAR's size is a power of two and its
  assigned address aligned to it;
- ``config_readback``: the Command register keeps Memory Space Enable (when the core has
  a memory BAR) as enumeration wrote it, and the header type is 0;
- ``devsel_timing``: the Status register's DEVSEL timing is fast, medium or slow (not 11);
- ``absent_functions``: with Header Type bit 7 clear (single function), functions 1..7
  either do not answer or answer as copies of function 0 (a warning: a single-function
  device may ignore the function number, AD[10:8]); a function that answers with another
  header fails (the device has functions its Header Type hides);
- ``memory_read``: a single read at each memory BAR completes without an abort;
- ``ram_bars``: which memory BARs are RAM, that the next two checks may write: those the
  description's ``ram_bars`` names, or else each memory BAR found so by a probe that
  first reads its first 64 bytes (a BAR that reads like the function's configuration
  header, as bridge cores map it, is registers and never written) and then writes a
  pattern into three DWORDs (its last, first and middle one), reads it back and restores
  what was there (a word that does not keep it: registers);
- ``memory_write_read``: eight DWORDs of seeded random data at seeded random offsets of
  each RAM BAR, then two partial words (byte enables), read back;
- ``memory_burst``: a burst of up to 16 data phases at a seeded random offset of each RAM
  BAR, written and read back;
- ``parity_reporting``: when the core keeps Parity Error Response, the host bridge sends
  it data with bad parity (a configuration write of its Interrupt Line and a write into
  a RAM BAR) and an address with bad parity; the core must report them as its Command
  register asks (the checker's ``perr_not_reported``/``serr_not_reported``) and set
  Detected Parity Error (and Signaled System Error with SERR# Enable) in its Status;
- ``master``: with the description's master hook, the core masters (its routine or its
  register sequence starts it) against a seeded pattern in a host-memory buffer; the row
  says what its transactions did there: bytes written inside and outside the buffer, how
  host memory ended them (retries, disconnects, aborts), data phases, clocks;
- ``under_load``: with a scenario as the profile (``rtc``), the core's RAM (or its
  configuration space) is read and written while the scenario's traffic runs, until the
  legacy device has answered one clock tick (at most :data:`LOAD_CLOCKS` of bus time), so
  that the run meets the scenario's traffic and not only its start;
- ``reset``: after RST# in mid-run the core is unconfigured (Command reads 0) and
  enumerates again.

Each row also keeps the first violations its traffic caused (:data:`LOG_DEPTH`, in
clock order): the cycle (clocks since the model started, the count the waves show too),
the rule, the line for a driver rule, and the agents (for a pin rule the one that broke it,
by the rule's culprit: the master of the transaction, or the target that answered it;
agents A and B of a driver rule; slot 0 by the core's name). A row fails on a broken rule
unless pcispy broke it on purpose: the check's own fault injection, or the host-bridge
profile's ``breaks_rules`` (a slow machine's latency), as long as no log entry of that
rule names the core; such rules are listed as ``expected``.

The seed chooses every random offset and word, and the host profile's random latencies
and retries; the profile shapes host memory, which only a core that masters meets (and
the arbiter's parking). :func:`run_core_checks` builds the model and runs them (the bench
runs inside the simulator: ``pcispy.sim.coretest``, cocotb test ``core_checks``); the
simulator's own output goes to ``sim-test.log`` in the model's folder. From pytest,
``assert_core_passes("my_core.json")`` fails with the table when a check failed. With
``waves="fst"`` or ``"vcd"`` the run records every signal of the system (the resolved
bus, and each agent's output enables as the resolver's ``<line>_oe`` inputs, bit k =
agent k of :func:`~pcispy.sim.system.driver_names`) for GTKWave or Surfer.
"""

import contextlib
import importlib
import importlib.util
import json
import os
import random
import tempfile
from pathlib import Path

import cocotb
from cocotb.triggers import SimTimeoutError, with_timeout

from pcispy.pci.rules import RULES_BY_NAME
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.initiator_control import Outcome
from pcispy.sim.bfm.resolver import LOG_DEPTH as RESOLVER_LOG_DEPTH
from pcispy.sim.core_description import CoreDescription
from pcispy.sim.launcher import bench_env
from pcispy.sim.scenarios import RTC_REGISTERS
from pcispy.sim.model import build_system
from pcispy.sim.system import BOARD_SLOT, Agent, SystemConfig, slot0_name
from pcispy.sim.verilate import fst_missing

__all__ = ["CHECKS", "RESULTS", "MasterRun", "run_core_checks", "assert_core_passes",
           "format_table", "RESULT_ENV", "WRITES_ENV", "LOG_DEPTH", "LOAD_CLOCKS",
           "violation_log", "waves_target"]

#: Where the bench writes its rows (a JSON file).
RESULT_ENV = "PCISPY_CORETEST_RESULT"
#: "0" skips every write into the core's memory windows (the RAM probe's too).
WRITES_ENV = "PCISPY_CORETEST_WRITES"

#: What a row's ``result`` may be; only "fail" makes ``pcispy sim-test`` exit 3.
RESULTS = ("pass", "warn", "fail", "skip")

#: Violations a row keeps: as many as each monitor logs after a clear (the checker's log is
#: as deep as the resolver's).
LOG_DEPTH = RESOLVER_LOG_DEPTH

#: Most bus time the ``under_load`` check runs for under a scenario: enough for one of
#: the rtc scenario's clock ticks whenever the check starts (the first tick comes 16000
#: clocks after the start, then one every ~32000); it ends after the first tick it sees.
LOAD_CLOCKS = 40_000

# Command and Status bits (PCI LB 3.0 §6.2.2, §6.2.3).
_MEMORY_SPACE = 1 << 1
_PARITY_RESPONSE = 1 << 6
_SERR_ENABLE = 1 << 8
_SIGNALED_SERR = 1 << 14
_DETECTED_PARITY = 1 << 15
_STATUS_ERRORS = 0xF900        # Status bits 15..11 and 8: write 1 to clear
_HEADER_WORDS = 16             # DWORDs of the type 0 header
_PROBE_PATTERN = 0xA55A_5AA5   # XORed into a probed word (every bit changes)


class _Skip(Exception):
    """A check that does not apply to this core."""


class _Warn(Exception):
    """A check that found something allowed but worth knowing."""


async def _config(system, register, function=0):
    """A DWORD of slot 0's configuration space, None when nobody answered."""
    result = await system.host.config_read(BOARD_SLOT, register, function=function)
    return result.value if result.status == Outcome.OK else None


async def _present(system, state):
    ids = await _config(system, 0x00)
    assert ids is not None and ids & 0xFFFF != 0xFFFF, f"Vendor ID reads {ids!r}"
    return f"vendor {ids & 0xFFFF:#06x} device {ids >> 16:#06x}"


async def _enumerates(system, state):
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
    function = _function(state)
    memory = any(bar.kind == "memory" for bar in function.bars)
    command = (await _config(system, 0x04) or 0) & 0xFFFF
    if memory:
        assert command & _MEMORY_SPACE, f"Command {command:#06x}: Memory Space Enable not kept"
    header = (await _config(system, 0x0C) or 0) >> 16 & 0x7F
    assert header == 0, f"header type {header:#x}, not 0"
    return f"Command {command:#06x}"


async def _devsel_timing(system, state):
    status = (await _config(system, 0x04) or 0) >> 16
    timing = status >> 9 & 3
    assert timing != 3, f"Status {status:#06x}: DEVSEL timing 11 is reserved"
    return ("fast", "medium", "slow")[timing]


async def _header_words(system, function=0, registers=(0x00, 0x08, 0x0C)):
    """The IDs, class and header-type DWORDs of a function (what tells functions apart)."""
    return [await _config(system, register, function) for register in registers]


async def _absent_functions(system, state):
    # PCI LB 3.0 §6.2.1: Header Type bit 7 says whether the device has more than one
    # function. A single-function device may ignore the function number, AD[10:8], of a
    # type 0 configuration cycle (§3.2.2.3), and then answers every function as function
    # 0: allowed, which is why configuration software reads function 0's Header Type
    # before it scans functions 1-7. What no rule allows is a function 1-7 of its own
    # behind a Header Type that says single-function: software would never find it.
    header = (await _config(system, 0x0C) or 0) >> 16 & 0xFF
    answered = {}
    for number in range(1, 8):
        ids = await _config(system, 0x00, number)
        if ids is not None and ids & 0xFFFF != 0xFFFF:
            answered[number] = await _header_words(system, number)
    if header & 0x80:
        return f"multi-function (Header Type {header:#04x}): functions " \
               f"{sorted(answered) or 'none'} answer besides 0"
    if not answered:
        return "functions 1-7 absent"
    own = await _header_words(system)
    others = sorted(number for number, words in answered.items() if words != own)
    assert not others, (
        f"functions {others} answer with a header other than function 0's, but Header Type "
        f"{header:#04x} says single-function (bit 7 clear): software never looks for them")
    raise _Warn(f"functions {sorted(answered)} answer as copies of function 0: allowed for a "
                f"single-function device (it may ignore AD[10:8]), but software that scans "
                f"functions without reading Header Type bit 7 finds the device eight times")


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


async def _read_word(system, address):
    result = await system.host.mem_read(address, 4)
    assert result.ok, f"read at {address:#x}: {result.status.name}"
    return int.from_bytes(result.data, "little")


async def _write_word(system, address, word):
    result = await system.host.mem_write(address, word.to_bytes(4, "little"))
    assert result.ok, f"write at {address:#x}: {result.status.name}"


async def _probe(system, bar, header, writes):
    """``(is RAM, why)`` of memory BAR ``bar``: registers when its first words read like
    the configuration ``header``, or when a probed word does not keep a pattern."""
    words = min(_HEADER_WORDS, bar.size // 4)
    window = [await _read_word(system, bar.address + 4 * i) for i in range(words)]
    if window[0] == header[0] and header[0] not in (0, 0xFFFF_FFFF):
        return False, "registers: reads like the configuration header (IDs " \
                      f"{header[0]:#010x}), never written"
    same = sum(1 for mine, theirs in zip(window, header) if mine == theirs and mine)
    if same >= 3:
        return False, f"registers: {same} of its first {words} DWORDs read like the " \
                      "configuration header, never written"
    if not writes:
        return False, "not probed (writes disabled)"
    for offset in sorted({bar.size - 4, 0, bar.size // 2 & ~3}, reverse=True):
        address = bar.address + offset
        old = await _read_word(system, address)
        await _write_word(system, address, old ^ _PROBE_PATTERN)
        back = await _read_word(system, address)
        await _write_word(system, address, old)
        if back != old ^ _PROBE_PATTERN:
            return False, f"registers: +{offset:#x} did not keep a written word"
    return True, "RAM (probed: 3 words kept a pattern)"


async def _ram_bars(system, state):
    bars = {bar.index: bar for bar in _memory_bars(state)}
    core = system.config.core
    declared = getattr(core, "ram_bars", None)
    notes = []
    if declared is not None:
        wrong = [index for index in declared if index not in bars]
        assert not wrong, (f"ram_bars names BAR{wrong[0]}, which is not a memory BAR of the "
                           f"core (memory BARs: {sorted(bars) or 'none'})")
        state["ram"] = [bars[index] for index in declared]
        notes = [f"BAR{index} RAM (ram_bars)" for index in declared]
        notes += [f"BAR{index} not RAM (ram_bars)" for index in bars if index not in declared]
    else:
        header = [await _config(system, 4 * i) or 0 for i in range(_HEADER_WORDS)]
        state["ram"] = []
        for index, bar in bars.items():
            is_ram, why = await _probe(system, bar, header, state["writes"])
            if is_ram:
                state["ram"].append(bar)
            notes.append(f"BAR{index} {why}")
    return "; ".join(notes)


def _ram(state):
    if not state["writes"]:
        raise _Skip("writes disabled")
    if "ram" not in state:
        raise _Skip("no RAM BAR decided")
    if not state["ram"]:
        raise _Skip("no RAM BAR (see ram_bars)")
    return state["ram"]


async def _memory_write_read(system, state):
    rng = state["rng"]
    written = 0
    for bar in _ram(state):
        offsets = rng.sample(range(bar.size // 4), min(8, bar.size // 4))
        words = {4 * i: rng.getrandbits(32) for i in offsets}
        for offset, word in words.items():
            await _write_word(system, bar.address + offset, word)
        for offset, word in words.items():
            back = await _read_word(system, bar.address + offset)
            assert back == word, (f"BAR{bar.index} +{offset:#x}: read {back:#010x}, wrote "
                                  f"{word:#010x} (seed {system.seed})")
        # Two partial words: one byte, then two in the middle (byte enables).
        for first, size in ((rng.randrange(4), 1), (1, 2)):
            offset = 4 * rng.randrange(bar.size // 4)
            old = (await _read_word(system, bar.address + offset)).to_bytes(4, "little")
            data = rng.randbytes(size)
            result = await system.host.mem_write(bar.address + offset + first, data)
            assert result.ok, f"BAR{bar.index} +{offset + first:#x}: {result.status.name}"
            expected = old[:first] + data + old[first + size:]
            back = (await _read_word(system, bar.address + offset)).to_bytes(4, "little")
            assert back == expected, (f"BAR{bar.index} +{offset:#x}: {size} byte(s) at "
                                      f"{first}: read {back.hex()}, expected "
                                      f"{expected.hex()} (seed {system.seed})")
        written += len(words)
    return f"{written} words at random offsets and 2 partial words per RAM BAR read " \
           f"back (seed {system.seed})"


async def _memory_burst(system, state):
    rng = state["rng"]
    shown = []
    for bar in _ram(state):
        phases = min(16, bar.size // 4)
        offset = 4 * rng.randrange(bar.size // 4 - phases + 1)
        data = rng.randbytes(4 * phases)
        wrote = await system.host.mem_write(bar.address + offset, data, burst=phases)
        assert wrote.ok and wrote.dwords == phases, f"BAR{bar.index} write: {wrote}"
        back = await system.host.mem_read(bar.address + offset, len(data), burst=phases)
        assert back.ok and back.data == data, (f"BAR{bar.index} +{offset:#x}: read "
                                               f"{back.data.hex()} (seed {system.seed})")
        shown.append(f"BAR{bar.index} +{offset:#x}: {phases} phases, "
                     f"{back.transactions} transaction(s), {back.clocks} clocks")
    return "; ".join(shown)


async def _parity_reporting(system, state):
    _function(state)            # skipped when not enumerated
    command = (await _config(system, 0x04) or 0) & 0xFFFF
    if not command & _PARITY_RESPONSE:
        raise _Skip(f"Parity Error Response reads 0 (Command {command:#06x}): the core "
                    "does not check parity")
    slot = BOARD_SLOT
    state["expected"] = {"write_data_parity", "address_parity"}
    await system.host.config_write(slot, 0x04, command | _STATUS_ERRORS << 16)
    line = (await _config(system, 0x3C) or 0) & 0xFF
    ram = state.get("ram") if state["writes"] else None
    word = await _read_word(system, ram[0].address) if ram else 0
    async with _host_alone(system) as host:
        # Data parity: a configuration write of the Interrupt Line (the value it holds),
        # and a write into a RAM BAR (the word it holds), both with wrong PAR.
        await host.inject(wdata_parity=1)
        await host.config_write(slot, 0x3C, line, be=0b1110)
        if ram:
            await host.mem_write(ram[0].address, word.to_bytes(4, "little"))
        # Address parity: a configuration read whose address phase has wrong PAR (the
        # core may leave it unclaimed: a master abort).
        await host.inject(addr_parity=1)
        await host.config_read(slot, 0x00)
        await host.inject()
    status = (await _config(system, 0x04) or 0) >> 16
    await host.config_write(slot, 0x04, command | _STATUS_ERRORS << 16)
    assert status & _DETECTED_PARITY, \
        f"Status {status:#06x}: Detected Parity Error not set after parity errors"
    if command & _SERR_ENABLE:
        assert status & _SIGNALED_SERR, (f"Status {status:#06x}: Signaled System Error not "
                                         "set after an address parity error (SERR# Enable on)")
    targets = "its Interrupt Line" + (f" and BAR{ram[0].index}" if ram else "")
    return f"data parity errors into {targets} and an address parity error reported " \
           f"(Status {status:#06x})"


@contextlib.asynccontextmanager
async def _host_alone(system):
    """The host bridge's driver, for commands nobody else's may come between (a
    scenario shares the host bridge through a lock: held meanwhile)."""
    host = system.host
    lock = getattr(host, "lock", None)
    if lock is None:
        yield host
        return
    async with lock:
        yield host.driver


class MasterRun:
    """What a master hook's routine gets (``await routine(run)``): ``system`` (the
    :class:`~pcispy.sim.api.SimSystem`), ``bars`` (``{index: bus address}`` of the core's
    BARs), ``buffer`` and ``buffer_bytes`` (the host-memory buffer the core may master
    into or from, filled with a seeded pattern), ``seed`` and ``rng`` (a
    :class:`random.Random` of it), and short forms for 32-bit register access."""

    def __init__(self, system, function, buffer, buffer_bytes, rng):
        self.system = system
        self.bars = {bar.index: bar.address for bar in function.bars}
        self.buffer = buffer
        self.buffer_bytes = buffer_bytes
        self.seed = system.seed
        self.rng = rng

    def _address(self, bar, offset):
        if bar not in self.bars:
            raise ValueError(f"the core has no BAR{bar} (BARs: {sorted(self.bars)})")
        return self.bars[bar] + offset

    async def write(self, bar, offset, value):
        """A 32-bit memory write at ``offset`` of BAR ``bar`` through the host bridge."""
        await _write_word(self.system, self._address(bar, offset), value)

    async def read(self, bar, offset):
        """A 32-bit memory read at ``offset`` of BAR ``bar`` through the host bridge."""
        return await _read_word(self.system, self._address(bar, offset))

    async def wait(self, clocks):
        """Let ``clocks`` bus clocks pass."""
        await self.system.ctl[Agent.SYSTEM].clocks(clocks)


def _routine(name):
    """The coroutine function a hook's ``routine`` names ("file.py:function" with an
    absolute path, or "module:function")."""
    where, _, function = name.rpartition(":")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(
            f"pcispy_master_hook_{abs(hash(where))}", where)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    return getattr(module, function)


async def _run_hook(system, hook, run):
    """Start the core's mastering as ``hook`` says and wait until it is done."""
    if hook.routine:
        return await _routine(hook.routine)(run)
    values = {"buffer": run.buffer, "buffer_bytes": run.buffer_bytes}
    for bar, offset, value in hook.writes:
        await run.write(bar, offset, values.get(value, value))
    bar, offset, mask, value = hook.done
    while (await run.read(bar, offset)) & mask != value:
        await run.wait(64)
    return None


async def _master(system, state):
    hook = getattr(system.config.core, "master", None)
    if hook is None:
        raise _Skip("no master hook (the description's master)")
    function = _function(state)
    # The buffer: past a guard of a page at the start of the DMA region, page aligned;
    # a guard of 256 bytes each side is filled too, to see writes outside it.
    guard = 256
    start, end = system.dma_region
    buffer = (start + 4096 + 4095) // 4096 * 4096
    assert buffer + hook.buffer_bytes + guard <= end, \
        f"a {hook.buffer_bytes}-byte buffer does not fit host memory"
    rng = random.Random(system.seed)
    pattern = rng.randbytes(hook.buffer_bytes + 2 * guard)
    memory = system.host_memory
    await memory.backdoor_write(buffer - guard, pattern)
    await memory.clear_stats()
    run = MasterRun(system, function, buffer, hook.buffer_bytes, rng)
    first = await system.cycle()
    try:
        answer = await with_timeout(_run_hook(system, hook, run),
                                    hook.timeout_clocks * system.period_ns, "ns")
    except SimTimeoutError:
        raise AssertionError(f"the core was not done within {hook.timeout_clocks} "
                             "clocks (master.timeout_clocks)") from None
    clocks = await system.cycle() - first
    after = await memory.backdoor_read(buffer - guard, len(pattern))
    changed = [i - guard for i, (a, b) in enumerate(zip(after, pattern)) if a != b]
    inside = [i for i in changed if 0 <= i < hook.buffer_bytes]
    outside = [i for i in changed if not 0 <= i < hook.buffer_bytes]
    stats = await memory.stats()
    state["master"] = {"bytes_written": len(inside), "bytes_outside": len(outside),
                       "clocks": clocks, "host_memory": stats, "routine": answer}
    assert not outside, (f"the core wrote {len(outside)} bytes outside the buffer "
                         f"(from {min(outside):+d} bytes off its start)")
    detail = (f"{len(inside)} of the buffer's {hook.buffer_bytes} bytes changed; host memory saw "
              f"{stats['transactions']} transactions, {stats['data_phases']} data phases, "
              f"{stats['retries']} retries, {stats['disconnects']} disconnects, "
              f"{stats['aborts']} aborts; {clocks} clocks")
    if answer:
        detail += f"; routine: {answer}"
    return detail


async def _under_load(system, state):
    scenario = getattr(system, "scenario", None)
    if scenario is None:
        raise _Skip("no scenario (--profile rtc runs one)")
    rng = state["rng"]
    clock = system.ctl[Agent.SYSTEM]
    ram = state.get("ram") if state["writes"] else None
    async def legacy_transactions():
        return (await system.legacy.stats())["transactions"] if system.config.legacy else 0

    legacy_before = await legacy_transactions()
    start = await system.cycle()
    accesses = 0
    # Until the legacy device has answered one clock tick's accesses (its registers'
    # index writes and data reads), at most LOAD_CLOCKS.
    while await system.cycle() < start + LOAD_CLOCKS:
        if accesses % 16 == 0 and \
                await legacy_transactions() - legacy_before >= 2 * len(RTC_REGISTERS):
            break
        if ram:
            bar = rng.choice(ram)
            address = bar.address + 4 * rng.randrange(bar.size // 4)
            word = rng.getrandbits(32)
            await _write_word(system, address, word)
            back = await _read_word(system, address)
            assert back == word, (f"BAR{bar.index} at {address:#x}: read {back:#010x}, "
                                  f"wrote {word:#010x} (seed {system.seed})")
            accesses += 2
        else:
            assert await _config(system, 0x00) is not None, "the core stopped answering"
            accesses += 1
        await clock.clocks(rng.randrange(50, 400))
    clocks = await system.cycle() - start
    legacy = await legacy_transactions() - legacy_before
    where = f"{len(ram)} RAM BAR(s)" if ram else "its configuration space"
    return (f"{accesses} accesses to {where} over {clocks} clocks of the {scenario.name} "
            f"scenario (the legacy device answered {legacy} transactions meanwhile)")


async def _reset(system, state):
    await system.pulse_reset()
    command = (await _config(system, 0x04) or 0) & 0xFFFF
    assert command & 0b111 == 0, f"Command {command:#06x} after RST#"
    state.pop("function", None)
    await _enumerates(system, state)
    return "unconfigured, enumerated again"


#: ``(name, check)`` in the order they run.
CHECKS = (
    ("present", _present), ("enumerates", _enumerates),
    ("config_readback", _config_readback), ("devsel_timing", _devsel_timing),
    ("absent_functions", _absent_functions), ("memory_read", _memory_read),
    ("ram_bars", _ram_bars), ("memory_write_read", _memory_write_read),
    ("memory_burst", _memory_burst), ("parity_reporting", _parity_reporting),
    ("master", _master), ("under_load", _under_load), ("reset", _reset),
)


def _culprits(rule, entry):
    """Who broke pin rule ``rule`` in checker log ``entry``, as ``"name (role)"`` strings:
    the master for an initiator's rule, the target that answered for a target's, both for
    a rule about data (the sender or the receiver is one of them), the arbiter for its
    own; none where the pins cannot tell."""
    culprit = RULES_BY_NAME[rule].culprit
    roles = {"initiator": ("master",), "target": ("target",),
             "sender": ("master", "target"), "receiver": ("master", "target")}.get(culprit, ())
    named = [f"{entry.get(role)} ({role})" for role in roles if entry.get(role)]
    return ["arbiter"] if culprit == "arbiter" else named


def violation_log(report, depth=LOG_DEPTH):
    """The first ``depth`` violations of a checker report (both monitors' logs) in clock
    order: ``{"cycle", "rule", "line", "agents"}`` (``line`` "" for a pin rule). A pin
    rule's agents are who broke it, with their role (:func:`_culprits`: the target for a
    target's rule, never the master who only started the transaction); a driver rule's
    are the resolver's agents A and B."""
    entries = [{"cycle": entry["cycle"], "rule": rule, "line": "",
                "agents": _culprits(rule, entry)}
               for entry in report["log"] for rule in entry["rules"]]
    entries += [{"cycle": entry["cycle"], "rule": entry["rule"], "line": entry["line"],
                 "agents": [a for a in (entry["agent_a"], entry["agent_b"]) if a]}
                for entry in report["driver_log"]]
    entries.sort(key=lambda entry: entry["cycle"])
    return entries[:depth]


def _expected(rules, log, on_purpose, core):
    """The rules of ``rules`` pcispy broke on purpose (``on_purpose``) without the core
    being named for them in ``log``."""
    blamed = {entry["rule"] for entry in log
              if any(agent == core or agent.startswith(f"{core} (")
                     for agent in entry["agents"])}
    return sorted(rule for rule in rules if rule in on_purpose and rule not in blamed)


async def _run_checks(system, writes):
    rows = []
    state = {"writes": writes, "rng": random.Random(system.seed)}
    core = slot0_name(system.config)
    scenario = getattr(system, "scenario", None)
    profile_rules = set(system.profile.breaks_rules) | \
        set(scenario.breaks_rules if scenario else ())
    for name, check in CHECKS:
        row = {"check": name, "result": "pass", "detail": "", "rules": {}, "expected": [],
               "log": []}
        state["expected"] = set()
        try:
            row["detail"] = await check(system, state) or ""
        except _Skip as why:
            row.update(result="skip", detail=str(why))
        except _Warn as why:
            row.update(result="warn", detail=str(why))
        except AssertionError as failure:
            # The first line: cocotb's assertion rewriting appends the expression after it.
            row.update(result="fail", detail=(str(failure) or "assertion failed").splitlines()[0])
        report = await system.checker_report()
        row["rules"] = {**report["violations"], **report["drivers"]}
        row["log"] = violation_log(report)
        row["expected"] = _expected(row["rules"], row["log"],
                                    profile_rules | state["expected"], core)
        if set(row["rules"]) - set(row["expected"]) and row["result"] in ("pass", "warn"):
            row["result"] = "fail"
        if name == "master" and "master" in state:
            row["master"] = state["master"]
        await system.clear_checker()
        rows.append(row)
    return rows


@cocotb.test()
async def core_checks(dut):
    """Every check of :data:`CHECKS` on slot 0; rows to the file RESULT_ENV names."""
    system = await SimSystem(dut).start()
    rows = await _run_checks(system, os.environ.get(WRITES_ENV, "1") != "0")
    with open(os.environ[RESULT_ENV], "w") as out:
        json.dump(rows, out)


def waves_target(waves, path=None, label="core"):
    """``(format, file, note)`` for a run asked to record ``waves`` ("fst"/"vcd") into
    ``path`` (default ``<label>.<format>`` in the current folder): FST falls back to VCD
    (the file's suffix too) where Verilator's FST writer cannot be built, ``note`` saying
    why (else None)."""
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
                    waves=None, waves_file=None, log=None):
    """Build (or reuse) the model with ``core`` (a
    :class:`~pcispy.sim.core_description.CoreDescription` or a path to one) in slot 0 and
    run :data:`CHECKS`; return the rows (``{"check", "result": one of RESULTS, "detail",
    "rules": {rule: count}, "expected":
    [rules pcispy broke on purpose], "log"}``, and ``"master"`` for the master check).
    The simulator's output goes to ``log_file`` (default: ``sim-test.log`` in the model's
    folder); ``log``, a list, receives that file's path. ``waves`` ("fst" or "vcd")
    records the run into ``waves_file`` (a model of its own; :func:`waves_target` says
    where and falls back to VCD when FST cannot be built). A description that cannot sit
    on a ``width``-bit bus raises :class:`~pcispy.sim.core_description.DescriptionError` before any
    build."""
    if not isinstance(core, CoreDescription):
        core = CoreDescription.load(core)
    else:
        core.check_sources()
    core.check(width)
    config = SystemConfig(width=width, core=core)
    trace = None
    if waves is not None:
        waves, trace, _ = waves_target(waves, waves_file, core.label)
    model = build_system(config, waves=waves)
    log_file = log_file or model.build_dir / "sim-test.log"
    if log is not None:
        log.append(str(log_file))
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "rows.json")
        env = bench_env(config, profile=profile, seed=seed)
        env.update({RESULT_ENV: result, WRITES_ENV: "1" if writes else "0"})
        model.run("pcispy.sim.coretest", "core_checks", env=env, log_file=str(log_file),
                  waves=trace or False)
        with open(result) as rows:
            return json.load(rows)


def _rule_counts(row):
    """A row's rules with how often each fired, expected ones marked ``*``."""
    return ", ".join(f"{rule}{'*' if rule in row.get('expected', ()) else ''} x{count}"
                     for rule, count in row["rules"].items()) or "-"


def format_table(rows):
    """The rows as a plain-text table, one line per check with the rules its traffic broke
    and how often (clocks each was broken in), then the violations each check's traffic
    caused (cycle, rule, line, agents), if any."""
    broken = [_rule_counts(row) for row in rows]
    wide = max([24, *map(len, broken)])
    lines = [f"{'check':<18} {'result':<6} {'rules broken':<{wide}} detail"]
    for row, rules in zip(rows, broken):
        lines.append(f"{row['check']:<18} {row['result']:<6} {rules:<{wide}} {row['detail']}")
    if any(row.get("expected") for row in rows):
        lines.append("* broken on purpose by pcispy (the check's fault injection or the host "
                     "profile), not counted against the core")
    logged = [(row["check"], entry) for row in rows for entry in row.get("log", ())]
    if logged:
        lines += ["", f"violations (the first {LOG_DEPTH} of each check; cycle = clocks since "
                  "the model started):",
                  f"{'check':<18} {'cycle':>8}  {'rule':<26} {'line':<7} agents"]
        for check, entry in logged:
            agents = ", ".join(entry["agents"]) or "-"
            lines.append(f"{check:<18} {entry['cycle']:>8}  {entry['rule']:<26} "
                         f"{entry['line'] or '-':<7} {agents}")
    return "\n".join(lines) + "\n"


def assert_core_passes(core, **options):
    """:func:`run_core_checks` (same arguments), failing with the table when a check
    failed; returns the rows."""
    rows = run_core_checks(core, **options)
    assert not any(row["result"] == "fail" for row in rows), "\n" + format_table(rows)
    return rows
