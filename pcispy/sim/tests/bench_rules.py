# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches that break every protocol-checker rule on purpose, one rule per bench.

:data:`PROVOKE` maps each rule name of :data:`pcispy.check.checker.RULES` to an
``async provoke(system)`` that breaks exactly that rule through the bus models: one
error-injection knob of the test device (its initiator or its target) or of the arbiter,
or a raw command that is itself the violation (a reserved command code, REQ64# on an I/O
command, a configuration address with AD[1:0] = 1x, ...). Whatever else a provocation
sets up (wait states, a disconnect, a retry) is legal behaviour.

Every rule gets one cocotb test (``rule_<name>``): it starts the system (the board idle in
its slot), clears the checker, provokes, lets the bus settle and then requires that the
checker saw exactly that rule (counted, first, alone) and that no line had two drivers.
Each outcome is also written to the JSON file named by ``PCISPY_RESULT`` (``{rule name:
{"problems": [...], "report": ..., "seed": ..., "width": ...}}``), so the pytest wrapper
(``test_rules_system.py``) runs all benches of one width in one simulator and still
reports rule by rule.
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge, SimTimeoutError, with_timeout

from pcispy.pci.bus import Command
from pcispy.check.checker import RULES
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.profiles import DisconnectMode, RetryMode
from pcispy.sim.bfm.target_control import Knob
# The environment variable naming the JSON file the outcomes go to.
from pcispy.sim.launcher import RESULT_ENV
# The test device's windows and an address nobody claims (only constants: importing a
# bench would register its tests here too).
from pcispy.sim.tests.bench_bfm import NOBODY, TEST_IO, TEST_IO_SIZE, TEST_MEM, TEST_MEM_SIZE

__all__ = ["PROVOKE", "judge"]

#: A memory address above 4 GiB (a Dual Address Cycle), claimed by nobody.
ABOVE_4GIB = 0x1_0000_0100
#: Clocks to wait after a provocation: PERR# comes two clocks after its data, the
#: arbiter parks again a few clocks after the last transaction.
SETTLE = 16
#: Most simulated time one provocation may take (a hung one fails, it does not stall).
TIMEOUT_US = 500

#: ``{rule name: async provoke(system)}``, filled by :func:`_provokes`.
PROVOKE = {}


def _provokes(rule):
    def register(function):
        if rule in PROVOKE:
            raise ValueError(f"two provocations for rule {rule!r}")
        PROVOKE[rule] = function
        return function
    return register


async def _target_waits(system, clocks=2):
    """The test device's target waits ``clocks`` before every data phase after the first."""
    await system.test_target.set_fields(wait_mask=0xFFFF, wait_period=16, wait_clocks=clocks)


def _ok(result):
    assert result.ok, result
    return result


def _write12():
    return bytes(range(12))


# --- initiator signalling -----------------------------------------------------------------

@_provokes("frame_without_irdy")
async def _(s):
    await s.test_initiator.inject(frame_no_irdy=1)
    result = _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(range(8)), wait_next=1))
    assert result.transactions == 2, result
    assert await s.test_target.backdoor_read(0, 8) == bytes(range(8))


@_provokes("irdy_without_frame")
async def _(s):
    await s.test_initiator.inject(irdy_idle=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4)))


@_provokes("irdy_in_address_phase")
async def _(s):
    await s.test_initiator.inject(irdy_in_addr=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4)))


@_provokes("frame_reasserted")
async def _(s):
    await _target_waits(s)
    await s.test_initiator.inject(frame_reassert=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(range(16)), burst=2))
    assert await s.test_target.backdoor_read(0, 16) == bytes(range(16))


@_provokes("frame_dropped_in_wait")
async def _(s):
    await _target_waits(s)
    await s.test_initiator.inject(frame_drop_wait=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, _write12()))
    assert await s.test_target.backdoor_read(0, 12) == _write12()


@_provokes("irdy_withdrawn")
async def _(s):
    await _target_waits(s)
    await s.test_initiator.inject(irdy_drop=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, _write12()))


@_provokes("master_abort_early")
async def _(s):
    await s.test_initiator.inject(early_abort=1)
    result = await s.test_initiator.mem_write(NOBODY, bytes(4))
    assert result.status.name == "MASTER_ABORT", result


# --- target signalling --------------------------------------------------------------------

@_provokes("devsel_while_idle")
async def _(s):
    await s.test_target.inject(Knob.DEVSEL_ON_IDLE)
    await ClockCycles(s.dut.pci_clk, 8)


@_provokes("devsel_late")
async def _(s):
    await s.test_target.inject(Knob.DEVSEL_LATE)
    await s.host.mem_write(TEST_MEM, bytes(4))


@_provokes("devsel_dropped")
async def _(s):
    await s.test_target.inject(Knob.DEVSEL_DROP)
    _ok(await s.host.mem_write(TEST_MEM, _write12()))


@_provokes("devsel_on_special_cycle")
async def _(s):
    await s.test_target.inject(Knob.CLAIM_SPECIAL)
    await s.host.run(Command.SPECIAL_CYCLE, 0, 1, imm=1, imm_data=0x0000_1234)


@_provokes("trdy_without_devsel")
async def _(s):
    await s.test_target.inject(Knob.TRDY_WITHOUT_DEVSEL)
    await s.host.mem_write(TEST_MEM, bytes(4))


@_provokes("stop_without_claim")
async def _(s):
    # STOP# without DEVSEL# completes the data phase all the same: the initiator ends the
    # transaction at once, a target abort by the pins.
    await s.test_target.inject(Knob.STOP_WITHOUT_CLAIM)
    result = await s.host.mem_write(TEST_MEM, _write12())
    assert result.status.name == "TARGET_ABORT", result


@_provokes("stop_released_early")
async def _(s):
    await s.test_target.set_fields(disconnect_mode=DisconnectMode.WITHOUT_DATA.value,
                                   disconnect_every=1)
    await s.test_target.inject(Knob.STOP_EARLY_RELEASE)
    _ok(await s.host.mem_write(TEST_MEM, _write12()))


@_provokes("stop_withdrawn")
async def _(s):
    # A retry while the initiator still waits to assert IRDY#: the same knob then takes
    # STOP# back before its data phase completed.
    await s.test_target.set_fields(retry_mode=RetryMode.FIRST.value, retry_count=1,
                                   retry_probability=256)
    await s.test_target.inject(Knob.STOP_EARLY_RELEASE)
    result = _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4), wait_first=3))
    assert result.retries == 1, result


@_provokes("trdy_withdrawn")
async def _(s):
    await s.test_target.inject(Knob.TRDY_WITHDRAW)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4), wait_first=2))


@_provokes("target_response_changed")
async def _(s):
    await s.test_target.inject(Knob.STOP_ADDED_IN_WAIT)
    result = _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4), wait_first=3))
    assert result.disconnects == 1, result


@_provokes("trdy_in_read_turnaround")
async def _(s):
    # The word moved in the turnaround clock is the pulled-up AD with the pulled-up PAR
    # (nobody drives either): byte enables of odd parity (0001) make that PAR right.
    await s.test_target.inject(Knob.TRDY_IN_TURNAROUND)
    _ok(await s.host.run(Command.MEM_READ, TEST_MEM, 2, be_first=0b0001))


@_provokes("data_after_stop")
async def _(s):
    await s.test_target.set_fields(disconnect_mode=DisconnectMode.WITH_DATA.value,
                                   disconnect_every=2)
    await s.test_target.inject(Knob.TRDY_AFTER_STOP)
    _ok(await s.host.mem_write(TEST_MEM, bytes(range(16))))
    assert await s.test_target.backdoor_read(0, 16) == bytes(range(16))


# --- latency ------------------------------------------------------------------------------

@_provokes("initiator_latency")
async def _(s):
    await s.test_initiator.inject(irdy_late=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, _write12()))


@_provokes("target_initial_latency")
async def _(s):
    await s.test_target.inject(Knob.INITIAL_LATENCY_17)
    result = _ok(await s.host.mem_read(TEST_MEM, 4))
    assert result.latency == 17, result


@_provokes("target_initial_latency_bridge")
async def _(s):
    # Beyond 32 clocks also breaks the 16-clock rule; masked as for a host bridge.
    await s.set_rule_enable(~(1 << _rule_id("target_initial_latency")) & ((1 << 64) - 1))
    await s.test_target.set_fields(read_latency_min=33, read_latency_max=33)
    result = _ok(await s.host.mem_read(TEST_MEM, 4))
    assert result.latency == 33, result


@_provokes("target_subsequent_latency")
async def _(s):
    await s.test_target.inject(Knob.SUBSEQUENT_LATENCY_9)
    _ok(await s.host.mem_read(TEST_MEM, 8))


# --- commands and addresses ---------------------------------------------------------------

@_provokes("reserved_command")
async def _(s):
    result = await s.host.run(Command.RESERVED_4, TEST_MEM, 1)
    assert result.status.name == "MASTER_ABORT", result


@_provokes("dac_after_dac")
async def _(s):
    await s.test_initiator.inject(dac_twice=1)
    result = await s.test_initiator.mem_write(ABOVE_4GIB, bytes(4))
    assert result.status.name == "MASTER_ABORT", result


@_provokes("config_reserved_type")
async def _(s):
    from pcispy.sim.system import TEST_DEVICE_SLOT
    address = s.host.config_address(TEST_DEVICE_SLOT, 0) | 0b10
    result = await s.host.run(Command.CONFIG_READ, address, 1)
    assert result.status.name == "MASTER_ABORT", result


@_provokes("io_byte_enables_mismatch")
async def _(s):
    # AD[1:0] = 01 addresses byte 1, but only byte 0 is enabled.
    await s.host.run(Command.IO_READ, TEST_IO + 1, 1, be_first=0b1110)


@_provokes("mwi_byte_enables")
async def _(s):
    _ok(await s.host.run(Command.MEM_WRITE_INVALIDATE, TEST_MEM, 1, imm=1,
                               imm_data=0x1234_5678, be_first=0b0001))


@_provokes("reserved_burst_order_continued")
async def _(s):
    await s.test_target.inject(Knob.IGNORE_BURST_ORDER)
    _ok(await s.host.run(Command.MEM_WRITE, TEST_MEM | 1, 3, imm=1, imm_data=7))


# --- stability during waits ---------------------------------------------------------------

@_provokes("byte_enables_changed_in_wait")
async def _(s):
    await _target_waits(s)
    await s.test_initiator.inject(be_change=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, _write12()))


@_provokes("write_data_changed_in_wait")
async def _(s):
    await _target_waits(s)
    await s.test_initiator.inject(wdata_change=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, _write12()))


@_provokes("read_data_changed_in_wait")
async def _(s):
    await s.test_target.inject(Knob.READ_DATA_CHANGE)
    _ok(await s.test_initiator.mem_read(TEST_MEM, 4, wait_first=3))


# --- parity and error reporting -----------------------------------------------------------

@_provokes("address_parity")
async def _(s):
    await s.test_initiator.inject(addr_parity=1)
    await s.test_initiator.mem_write(TEST_MEM, bytes(4))


@_provokes("write_data_parity")
async def _(s):
    await s.test_initiator.inject(wdata_parity=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4)))


@_provokes("read_data_parity")
async def _(s):
    await s.test_target.inject(Knob.BAD_PAR, bad_par_phase=0)
    _ok(await s.host.mem_read(TEST_MEM, 4))


@_provokes("data_parity64")
async def _(s):
    await s.test_target.set_fields(ack64_capable=1)
    await s.test_initiator.inject(wdata_parity64=1)
    result = _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(range(16)), width=64))
    assert result.ack64, result


@_provokes("perr_timing")
async def _(s):
    await s.test_initiator.inject(perr_wrong=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4)))


@_provokes("perr_without_parity_error")
async def _(s):
    await s.test_target.inject(Knob.PERR_ON_GOOD_DATA)
    _ok(await s.host.mem_write(TEST_MEM, bytes(4)))


# --- arbitration --------------------------------------------------------------------------

@_provokes("frame_without_gnt")
async def _(s):
    # The arbiter takes GNT# away one clock into the test device's first transaction (it
    # may, to end a burst by the latency timer); the knob starts the next one regardless.
    # GNT# rests on the test device first, so that its first transaction has it and no
    # other master is parked on the bus when it starts.
    from pcispy.sim.system import MASTERS
    await s.arbiter.park_on(MASTERS["test_device"])
    await ClockCycles(s.dut.pci_clk, 4)
    await s.arbiter.remove_gnt_after(1)
    await s.test_initiator.inject(no_gnt=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(8), burst=1))


@_provokes("multiple_gnt")
async def _(s):
    # Two GNT#s while the host bridge's burst keeps the bus busy: on an idle bus both
    # granted masters would park on AD at once.
    burst = await s.host.submit_mem_write(TEST_MEM, bytes(256))
    await ClockCycles(s.dut.pci_clk, 8)
    await s.arbiter.double_grant(True)
    await ClockCycles(s.dut.pci_clk, 4)
    await s.arbiter.double_grant(False)
    _ok(await s.host.wait(burst))


@_provokes("gnt_switch_while_idle")
async def _(s):
    await s.arbiter.skip_idle_gap(True)
    _ok(await s.test_initiator.mem_write(0x1000, bytes(4)))


# --- 64-bit extension ---------------------------------------------------------------------

@_provokes("req64_frame_mismatch")
async def _(s):
    await s.test_target.set_fields(ack64_capable=1)
    await s.test_initiator.inject(req64_mismatch=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(24), width=64))


@_provokes("req64_non_memory")
async def _(s):
    # Two DWORDs at an 8-byte aligned I/O address: the initiator asks for REQ64#.
    _ok(await s.test_initiator.run(Command.IO_WRITE, TEST_IO, 2, req64=1, imm=1,
                                         imm_data=0x55))


@_provokes("ack64_without_req64")
async def _(s):
    await s.test_target.set_fields(ack64_capable=1)
    await s.test_target.inject(Knob.ACK64_WITHOUT_REQ64)
    await s.host.mem_read(TEST_MEM, 4)


@_provokes("ack64_devsel_mismatch")
async def _(s):
    await s.test_target.set_fields(ack64_capable=1)
    await s.test_target.inject(Knob.ACK64_LATE)
    _ok(await s.host.mem_read(TEST_MEM, 16, width=64))


# --- reset --------------------------------------------------------------------------------

@_provokes("signals_during_reset")
async def _(s):
    await s.test_target.inject(Knob.DEVSEL_IN_RESET)
    dut = s.dut
    await FallingEdge(dut.pci_clk)
    dut.pci_rst.value = 1
    await ClockCycles(dut.pci_clk, 4)
    await FallingEdge(dut.pci_clk)
    dut.pci_rst.value = 0


# --- bus ownership, termination and parity -----------------------------------------------

@_provokes("busy_bus_start")
async def _(s):
    # The host bridge writes a burst to the test device; the test device's initiator asks
    # for the bus meanwhile and gets GNT# (hidden arbitration). With the knob it takes the
    # host's completed final data phase for an idle bus and starts its address phase in
    # the very next clock, as only the host itself (fast back-to-back) could. Without an
    # idle clock, FRAME#, AD, C/BE#, IRDY#, PAR (and the targets' DEVSEL#, TRDY#, STOP#)
    # change drivers with no turnaround.
    await s.test_initiator.inject(busy_start=1)
    burst = await s.host.submit_mem_write(TEST_MEM, bytes(range(256)))
    mine = await s.test_initiator.submit_mem_write(0x1000, bytes(range(4)))
    _ok(await s.host.wait(burst))
    _ok(await s.test_initiator.wait(mine))
    assert await s.test_target.backdoor_read(0, 256) == bytes(range(256))
    assert await s.host_memory.backdoor_read(0x1000, 4) == bytes(range(4))


@_provokes("frame_held_after_stop")
async def _(s):
    # Data phase 1 completes with TRDY# and STOP# (disconnect with data) while FRAME# is
    # still asserted; the knob keeps FRAME# (and IRDY#) asserted one clock more, a phase
    # that completes with STOP# alone, before the final one.
    await s.test_target.set_fields(disconnect_mode=DisconnectMode.WITH_DATA.value,
                                   disconnect_every=2)
    await s.test_initiator.inject(frame_after_stop=1)
    result = _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(range(16))))
    assert result.disconnects == 2, result
    assert await s.test_target.backdoor_read(0, 16) == bytes(range(16))


@_provokes("dac_below_4g")
async def _(s):
    # A Dual Address Cycle for an address below 4 GiB: the second address phase carries
    # 0. No target here decodes DAC, so it ends in a master abort.
    await s.test_initiator.inject(dac_low=1)
    result = await s.test_initiator.mem_write(TEST_MEM, bytes(4))
    assert result.status.name == "MASTER_ABORT", result


@_provokes("perr_released_early")
async def _(s):
    # The test device's target waits for the write (TRDY# in clock 5); the initiator's PAR
    # is wrong while the phase waits and right after it completes (a wrong PAR no rule
    # sees by itself: PAR is checked after transfers). The target reports the error it
    # saw at once (clock 4, early, legal) but releases PERR# after one clock, before
    # completion + 2.
    await s.test_target.set_fields(write_latency_min=4, write_latency_max=4)
    await s.test_target.inject(Knob.PERR_RELEASED_EARLY)
    await s.test_initiator.inject(wdata_parity_wait=1)
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4)))
    assert (await s.test_target.stats())["parity_errors"] == 1


@_provokes("parked_bus_parity")
async def _(s):
    # GNT# rests on the test device's initiator, which with the knob does not park: AD,
    # C/BE# and PAR float (all ones, and PAR 1, where even parity needs 0). (The knob
    # park_no_par, AD and C/BE# parked without PAR, breaks this rule too, and also makes
    # PAR not follow AD's driver.)
    from pcispy.sim.system import MASTERS
    await s.test_initiator.inject(park_float=1)
    await s.arbiter.park_on(MASTERS["test_device"])
    _ok(await s.test_initiator.mem_write(TEST_MEM, bytes(4)))
    await ClockCycles(s.dut.pci_clk, 16)


# --- error reporting the Command register asks for ----------------------------------------

async def _command_set_but_ignored(s, ignored, companion):
    """Firmware sets Parity Error Response and SERR# Enable in the test device's Command
    register (a configuration write the checker sees); its target then ignores ``ignored``
    of its own register image (a device that keeps the bits and never reports). The rule
    the injected parity error breaks anyway, ``companion``, is masked so that the
    reporting rule fires alone."""
    from pcispy.sim.system import TEST_DEVICE_SLOT
    await s.test_target.set_windows(config=True)
    _ok(await s.host.config_write(TEST_DEVICE_SLOT, 0x04, 0x0143))
    await s.test_target.set_fields(**{name: 0 for name in ignored})
    await s.set_rule_enable(((1 << len(RULES)) - 1) & ~(1 << _rule_id(companion)))


@_provokes("perr_not_reported")
async def _(s):
    await _command_set_but_ignored(s, ("parity_response",), "write_data_parity")
    await s.host.inject(wdata_parity=1)
    _ok(await s.host.mem_write(TEST_MEM, bytes(4)))
    assert (await s.test_target.stats())["parity_errors"] == 1


@_provokes("serr_not_reported")
async def _(s):
    await _command_set_but_ignored(s, ("serr_enable",), "address_parity")
    await s.host.inject(addr_parity=1)
    await s.host.mem_write(TEST_MEM, bytes(4))
    assert (await s.test_target.stats())["parity_errors"] == 1


# --- the benches --------------------------------------------------------------------------

def _rule_id(name):
    return next(rule.id for rule in RULES if rule.name == name)


def judge(rule, report):
    """What is wrong with a checker ``report`` after provoking ``rule`` (empty: nothing).

    The pin rule must fire alone and first; of the resolver's driver rules exactly those
    the provocation trips unavoidably may fire (none but for the ones listed here)."""
    # Driver rules a pin rule's provocation cannot help breaking: a target that asserts
    # DEVSEL# while RST# is asserted drives it during reset; GNT# moved on an idle bus
    # without a free clock, or a master starting on a busy bus, takes AD and PAR over
    # from the agent driving them in the clock before; a parked agent that leaves the
    # parity wrong leaves the bus floating.
    trips = {"signals_during_reset": {"driven_during_reset"},
             "gnt_switch_while_idle": {"no_turnaround"},
             "busy_bus_start": {"no_turnaround"},
             "parked_bus_parity": {"parked_bus_floating"}}
    problems = []
    violations = report["violations"]
    if not violations.get(rule):
        problems.append(f"rule {rule} did not fire")
    others = sorted(set(violations) - {rule})
    if others:
        problems.append(f"other rules fired: {others}")
    first = (report["first"] or {}).get("rule")
    if first != rule:
        problems.append(f"first rule was {first}, not {rule}")
    drivers = set(report.get("drivers", {}))
    expected = trips.get(rule, set())
    if drivers != expected:
        problems.append(f"driver rules fired {sorted(drivers)}, expected {sorted(expected)}: "
                        f"{report.get('driver_log')}")
    if report["contention"] and "contention" not in expected:
        problems.append(f"two drivers on {report['contention']}")
    return problems


_outcomes = {}


def _record(rule, outcome):
    path = os.environ.get(RESULT_ENV)
    _outcomes[rule] = outcome
    if path:
        with open(path, "w") as f:
            json.dump(_outcomes, f, indent=1, sort_keys=True)


async def _check_rule(dut, rule):
    system = await SimSystem(dut).start()
    await system.test_target.set_windows(mem=(TEST_MEM, TEST_MEM_SIZE),
                                         io=(TEST_IO, TEST_IO_SIZE))
    await system.clear_checker()
    outcome = {"seed": system.seed, "width": system.config.width, "report": None}
    try:
        await with_timeout(PROVOKE[rule](system), TIMEOUT_US, "us")
        await ClockCycles(dut.pci_clk, SETTLE)
        outcome["report"] = report = await system.checker_report()
        problems = judge(rule, report)
    except SimTimeoutError:
        problems = [f"the provocation did not finish within {TIMEOUT_US} us"]
    except Exception as error:  # reported per rule, then raised by the assert below
        problems = [f"{type(error).__name__}: {error}"]
    outcome["problems"] = problems
    _record(rule, outcome)
    assert not problems, f"rule {rule} (seed {system.seed}): {problems}; {outcome['report']}"


def _bench(rule):
    async def bench(dut):
        await _check_rule(dut, rule.name)
    bench.__name__ = bench.__qualname__ = f"rule_{rule.name}"
    bench.__doc__ = f"Break rule {rule.id} ({rule.name}) alone: {rule.description}"
    return cocotb.test(timeout_time=4 * TIMEOUT_US, timeout_unit="us")(bench)


# One cocotb test per rule that has a provocation; the pytest wrapper fails the rules
# that have none.
for _rule in RULES:
    if _rule.name in PROVOKE:
        globals()[f"rule_{_rule.name}"] = _bench(_rule)
del _rule
