# SPDX-License-Identifier: BSD-2-Clause
"""The behavioural initiator against a scripted target (Amaranth's Python simulator).

Waveforms are asserted clock by clock from the address phase (clock 1 = index 0 of the
strings); each string is one line, inside level (1 = asserted).
"""

import pytest

from pcispy.pci.bus import Command, parity
from pcispy.sim.bfm.firmware import COMMAND_ENABLES, enumerate_bus
from pcispy.sim.bfm.initiator_control import (CONFIG, INJECT, STATUS_BUF_REFUSED,
                                              STATUS_CONFIG_REFUSED, Outcome, Reg, unpack)
from pcispy.sim.bfm.irq_responder import (END_OF_INTERRUPT_CLOCKS, InterruptResponderDriver,
                                          IrqReg)
from pcispy.sim.control import PysimControl
from pcispy.sim.tests._initiator_bench import (ConfigFunction, TargetScript, driver_problems,
                                               enables, run_bench, waves)

pytestmark = pytest.mark.bfm

CTRL = ["frame", "irdy", "devsel", "trdy", "stop"]


def _start(target, n=0):
    return target.transactions[n]["start"]


def _clean(target, **kwargs):
    assert not any(clock["contention"] for clock in target.trace), "two drivers on one line"
    assert driver_problems(target.trace, **kwargs) == []


def test_single_write_fast_target():
    results = {}

    async def bench(ctx, drv, target, h):
        results["r"] = await drv.mem_write(0x1000_0040, bytes([1, 2, 3, 4]))
        await ctx.tick().repeat(4)

    target = run_bench(bench, TargetScript(devsel_clock=2), checked=True)
    assert target.rules == set()
    r = results["r"]
    assert r.status == Outcome.OK
    assert (r.phases, r.dwords, r.transactions, r.retries, r.disconnects) == (1, 1, 1, 0, 0)
    assert r.latency == 1
    t0 = _start(target)
    assert waves(target.trace, t0, 4, CTRL) == {
        "frame":  "1000",
        "irdy":   "0100",
        "devsel": "0100",
        "trdy":   "0100",
        "stop":   "0000",
    }
    addr_phase, data_phase = target.trace[t0], target.trace[t0 + 1]
    assert (addr_phase["ad"], addr_phase["cbe"]) == (0x1000_0040, Command.MEM_WRITE.value)
    assert (data_phase["ad"], data_phase["cbe"]) == (0x0403_0201, 0)
    # PAR one clock after what it covers.
    assert target.trace[t0 + 1]["par"] == parity(0x1000_0040, Command.MEM_WRITE.value)
    assert target.trace[t0 + 2]["par"] == parity(0x0403_0201, 0)
    assert target.s.memory[0x1000_0040 >> 2] == 0x0403_0201
    _clean(target)


def _run_one(script, operation, *, width=32, gnt=None, settle=4, rules=()):
    """Run ``await operation(driver)`` against ``script``; return (result, target). The
    protocol checker watches the bus: it must have seen exactly ``rules`` broken."""
    box = {}

    async def bench(ctx, drv, target, h):
        box["r"] = await operation(drv)
        await ctx.tick().repeat(settle)

    target = run_bench(bench, script, width=width, gnt=gnt, checked=True)
    _clean(target)
    assert target.rules == set(rules)
    return box["r"], target


def test_burst_write_medium_devsel_with_target_waits():
    r, target = _run_one(TargetScript(devsel_clock=3, wait=1),
                         lambda d: d.mem_write(0x100, bytes(range(16))))
    assert (r.status, r.phases, r.dwords, r.transactions) == (Outcome.OK, 4, 4, 1)
    # CHECK, ARB, address phase, 8 data clocks, END.
    assert (r.latency, r.clocks) == (2, 12)
    t0 = _start(target)
    assert waves(target.trace, t0, 10, CTRL) == {
        "frame":  "1111111000",
        "irdy":   "0111111110",
        "devsel": "0011111110",
        "trdy":   "0010101010",
        "stop":   "0000000000",
    }
    assert [w[1] for w in target.writes] == [0x0302_0100, 0x0706_0504, 0x0B0A_0908, 0x0F0E_0D0C]


def test_read_has_turnaround_and_returns_data():
    r, target = _run_one(TargetScript(devsel_clock=2), lambda d: d.mem_read(0x200, 12))
    t0 = _start(target)
    assert waves(target.trace, t0, 6, CTRL) == {
        "frame":  "111100",
        "irdy":   "011110",
        "devsel": "011110",
        "trdy":   "001110",
        "stop":   "000000",
    }
    # Clock 2 is the turnaround: nobody drives AD (pull-ups), PAR still covers the address.
    assert target.trace[t0 + 1]["ad"] == 0xFFFF_FFFF
    assert target.trace[t0]["cbe"] == Command.MEM_READ.value
    expected = b"".join((0xA500_0000 | a * 0x0101).to_bytes(4, "little") for a in (0x80, 0x81, 0x82))
    assert r.data == expected
    assert (r.latency, r.last_data, r.phases) == (2, 0xA500_8282, 3)


def test_irdy_wait_states_first_and_next():
    r, target = _run_one(TargetScript(), lambda d: d.mem_write(0x40, bytes(12), wait_first=2,
                                                               wait_next=1))
    t0 = _start(target)
    assert waves(target.trace, t0, 10, ["frame", "irdy", "trdy"]) == {
        "frame": "1111111000",
        "irdy":  "0001010100",
        "trdy":  "0111111100",
    }
    assert (r.phases, r.clocks) == (3, 11)


def test_retry_repeats_the_same_transaction():
    r, target = _run_one(TargetScript(retries=2), lambda d: d.mem_write(0x100, bytes(range(8))))
    assert (r.status, r.retries, r.transactions, r.phases) == (Outcome.OK, 2, 3, 2)
    starts = [x["start"] - _start(target) for x in target.transactions]
    assert starts == [0, 6, 12]
    assert all(x["addr"] == 0x100 for x in target.transactions)
    t0 = _start(target)
    assert waves(target.trace, t0, 7, CTRL + ["req"]) == {
        "frame":  "1100001",
        "irdy":   "0110000",
        "devsel": "0110000",
        "trdy":   "0000000",
        "stop":   "0110000",
        "req":    "1110011",   # REQ# released two clocks after a retry
    }
    assert [w[0] for w in target.writes] == [0x40, 0x41]


def test_retry_limit_gives_up_and_reads_all_ones():
    async def op(d):
        await d.configure(retry_limit=3)
        return await d.mem_read(0x100, 8)

    r, target = _run_one(TargetScript(retries=10), op)
    assert (r.status, r.retries, r.transactions, r.phases) == (Outcome.RETRY_LIMIT, 3, 3, 0)
    assert r.data == b"\xff" * 8


def test_disconnect_with_data_continues_at_next_address():
    r, target = _run_one(TargetScript(disconnect_after=2),
                         lambda d: d.mem_write(0x100, bytes(range(16))))
    assert [hex(x["addr"]) for x in target.transactions] == ["0x100", "0x108"]
    assert (r.status, r.phases, r.transactions, r.disconnects) == (Outcome.OK, 4, 2, 2)
    t0 = _start(target)
    assert waves(target.trace, t0, 5, CTRL) == {
        "frame":  "11100",
        "irdy":   "01110",
        "devsel": "01110",
        "trdy":   "01100",
        "stop":   "00110",
    }
    assert [w[0] for w in target.writes] == [0x40, 0x41, 0x42, 0x43]


def test_disconnect_without_data_continues_read():
    r, target = _run_one(TargetScript(disconnect_after=2, disconnect_with_data=False),
                         lambda d: d.mem_read(0x100, 16))
    assert [hex(x["addr"]) for x in target.transactions] == ["0x100", "0x108"]
    assert (r.phases, r.disconnects, r.transactions) == (4, 1, 2)
    t0 = _start(target)
    assert waves(target.trace, t0, 7, CTRL) == {
        "frame":  "1111100",
        "irdy":   "0111110",
        "devsel": "0111110",
        "trdy":   "0011000",
        "stop":   "0000110",
    }
    assert r.data == b"".join((0xA500_0000 | a * 0x0101).to_bytes(4, "little")
                              for a in range(0x40, 0x44))


def test_master_abort_returns_all_ones():
    r, target = _run_one(TargetScript(devsel_clock=None), lambda d: d.mem_read(0x100, 8))
    assert (r.status, r.phases, r.last_data) == (Outcome.MASTER_ABORT, 0, 0xFFFF_FFFF)
    assert r.data == b"\xff" * 8
    t0 = _start(target)
    # No DEVSEL# by clock 5: FRAME# deasserted in clock 6, IRDY# in clock 7.
    assert waves(target.trace, t0, 8, ["frame", "irdy", "devsel"]) == {
        "frame":  "11111000",
        "irdy":   "01111100",
        "devsel": "00000000",
    }


def test_stop_without_devsel_ends_the_transaction():
    # A broken target: STOP# in clock 2 without DEVSEL#. The phase completes all the same
    # (IRDY# and STOP#), so FRAME# goes at once and the transaction ends; by its pins the
    # STOP# is a target abort.
    r, target = _run_one(TargetScript(stop_unclaimed=True), _write12,
                         rules={"stop_without_claim"})
    assert r.status == Outcome.TARGET_ABORT and r.phases == 0
    assert waves(target.trace, _start(target), 5, CTRL) == {
        "frame":  "11000",
        "irdy":   "01100",
        "devsel": "00000",
        "trdy":   "00000",
        "stop":   "01100",
    }


def test_subtractive_decode_at_clock_5_is_not_an_abort():
    r, target = _run_one(TargetScript(devsel_clock=5), lambda d: d.mem_read(0x100, 4))
    assert (r.status, r.latency) == (Outcome.OK, 4)


def test_target_abort_is_reported():
    r, target = _run_one(TargetScript(abort_at=1), lambda d: d.mem_write(0x100, bytes(range(16))))
    assert (r.status, r.phases, r.transactions) == (Outcome.TARGET_ABORT, 1, 1)
    t0 = _start(target)
    assert waves(target.trace, t0, 5, CTRL) == {
        "frame":  "11100",
        "irdy":   "01110",
        "devsel": "01000",
        "trdy":   "01000",
        "stop":   "00110",
    }
    assert len(target.transactions) == 1


def test_64bit_write_with_ack64():
    r, target = _run_one(TargetScript(ack64=True),
                         lambda d: d.mem_write(0x100, bytes(range(16)), width=64), width=64)
    assert (r.status, r.ack64, r.phases, r.dwords) == (Outcome.OK, True, 2, 4)
    t0 = _start(target)
    assert waves(target.trace, t0, 4, ["frame", "req64", "irdy", "ack64", "trdy"]) == {
        "frame": "1100",
        "req64": "1100",
        "irdy":  "0110",
        "ack64": "0110",
        "trdy":  "0110",
    }
    data = target.trace[t0 + 1]
    assert (data["ad"], data["ad_hi"]) == (0x0302_0100, 0x0706_0504)
    assert target.trace[t0 + 2]["par64"] == parity(0x0706_0504, 0)
    assert [w[0] for w in target.writes] == [0x40, 0x41, 0x42, 0x43]


def test_64bit_write_falls_back_to_32_without_ack64():
    r, target = _run_one(TargetScript(ack64=False),
                         lambda d: d.mem_write(0x100, bytes(range(16)), width=64), width=64)
    assert (r.status, r.ack64, r.phases, r.dwords) == (Outcome.OK, False, 4, 4)
    t0 = _start(target)
    assert waves(target.trace, t0, 6, ["frame", "req64", "irdy", "trdy"]) == {
        "frame": "111100",
        "req64": "111100",
        "irdy":  "011110",
        "trdy":  "011110",
    }
    # The upper DWORD of each pair is sent again on AD[31:0] in the next phase.
    assert [target.trace[t0 + i]["ad"] for i in range(1, 5)] == \
        [0x0302_0100, 0x0706_0504, 0x0B0A_0908, 0x0F0E_0D0C]


def test_64bit_single_qword_read_waits_for_ack64():
    # One or two data phases depends on ACK64#: IRDY# waits for DEVSEL# to know.
    r, target = _run_one(TargetScript(ack64=True), lambda d: d.mem_read(0x100, 8, width=64),
                         width=64)
    t0 = _start(target)
    assert waves(target.trace, t0, 4, ["frame", "irdy", "devsel", "ack64", "trdy"]) == {
        "frame":  "1100",
        "irdy":   "0010",
        "devsel": "0110",
        "ack64":  "0110",
        "trdy":   "0010",
    }
    assert (r.phases, r.dwords) == (1, 2)
    assert r.data == (0xA500_4040).to_bytes(4, "little") + (0xA500_4141).to_bytes(4, "little")


def test_dual_address_cycle_above_4gib():
    r, target = _run_one(TargetScript(devsel_clock=3),
                         lambda d: d.mem_write(0x1_2345_6780, bytes(range(4))))
    t0 = _start(target)
    first, second = target.trace[t0], target.trace[t0 + 1]
    assert (first["ad"], first["cbe"]) == (0x2345_6780, Command.DUAL_ADDRESS.value)
    assert (second["ad"], second["cbe"]) == (0x1, Command.MEM_WRITE.value)
    assert waves(target.trace, t0, 5, ["frame", "irdy", "devsel", "trdy"]) == {
        "frame":  "11000",
        "irdy":   "00110",
        "devsel": "00010",   # medium decode, one clock later after a DAC
        "trdy":   "00010",
    }
    assert target.transactions[0]["addr"] == 0x1_2345_6780
    assert r.latency == 3


def test_latency_timer_ends_burst_when_gnt_removed():
    async def gnt(ctx, h):
        while not ctx.get(h.bus["frame"]):
            await ctx.tick()
        await ctx.tick()
        ctx.set(h.gnt, 0)              # removed from clock 2 on
        await ctx.tick().repeat(8)
        ctx.set(h.gnt, 1)              # back in clock 10

    async def op(d):
        await d.configure(lat_timer=3)
        return await d.mem_write(0x100, bytes(32))

    r, target = _run_one(TargetScript(), op, gnt=gnt)
    assert (r.status, r.lt_ends, r.transactions, r.phases) == (Outcome.OK, 1, 2, 8)
    t0 = _start(target)
    # Expired once 3 clocks passed (edge of clock 4) with GNT# gone: clock 5 is the last phase.
    assert waves(target.trace, t0, 7, ["frame", "irdy", "trdy"]) == {
        "frame": "1111000",
        "irdy":  "0111100",
        "trdy":  "0111100",
    }
    assert target.transactions[1]["start"] - t0 == 10
    assert target.transactions[1]["addr"] == 0x110


def test_latency_timer_lets_mwi_finish_its_cache_line():
    async def gnt(ctx, h):
        while not ctx.get(h.bus["frame"]):
            await ctx.tick()
        await ctx.tick()
        ctx.set(h.gnt, 0)
        await ctx.tick().repeat(12)
        ctx.set(h.gnt, 1)

    async def op(d):
        await d.configure(lat_timer=3, cache_line=8)
        return await d.mem_write(0x100, bytes(64), command=Command.MEM_WRITE_INVALIDATE)

    r, target = _run_one(TargetScript(), op, gnt=gnt)
    assert (r.status, r.lt_ends, r.transactions, r.phases) == (Outcome.OK, 1, 2, 16)
    t0 = _start(target)
    # Plain Memory Write would end with phase 4 (clock 5); MWI runs to DWORD 7.
    assert waves(target.trace, t0, 11, ["frame", "irdy"]) == {
        "frame": "11111111000",
        "irdy":  "01111111100",
    }
    assert [x["addr"] for x in target.transactions] == [0x100, 0x120]


def test_cache_line_size_not_a_power_of_two_is_refused():
    async def op(d):
        await d.configure(cache_line=8)
        with pytest.raises(ValueError, match="cache line size 6"):
            await d.configure(cache_line=6)
        return await d.ctl.read(Reg.CONFIG), await d.status()

    (config, status), _ = _run_one(TargetScript(), op)
    assert unpack(CONFIG, config)["cache_line"] == 8
    assert not status & STATUS_CONFIG_REFUSED


def test_burst_limit_one_means_one_data_phase_per_transaction():
    r, target = _run_one(TargetScript(), lambda d: d.mem_write(0x100, bytes(range(12)), burst=1,
                                                               idle=2))
    assert [x["addr"] for x in target.transactions] == [0x100, 0x104, 0x108]
    assert (r.transactions, r.phases, r.disconnects) == (3, 3, 0)
    starts = [x["start"] for x in target.transactions]
    # address, data, END, two idle clocks, ARB: six clocks per store.
    assert [b - a for a, b in zip(starts, starts[1:])] == [6, 6]


def test_byte_enables_first_and_last():
    r, target = _run_one(TargetScript(), lambda d: d.mem_write(0x103, bytes([0xAA, 0xBB, 0xCC])))
    assert [(a, c) for a, _, c in target.writes] == [(0x40, 0b0111), (0x41, 0b1100)]
    assert target.s.memory[0x40] >> 24 == 0xAA
    assert target.s.memory[0x41] & 0xFFFF == 0xCCBB


def test_config_and_io_cycles():
    async def op(d):
        out = {}
        out["cfg"] = await d.config_read(3, 0x10)
        out["cfgw"] = await d.config_write(3, 0x04, 0x0147, be=0b1100)
        out["io"] = await d.io_read(0x71, 1)
        out["iow"] = await d.io_write(0x70, 0x8A, 1)
        return out

    function_ = ConfigFunction(0x1234, 0xABCD, 0x118000, [("mem", 4096)])
    out, target = _run_one(TargetScript(config={3: function_}), op)
    addrs = [(x["addr"], x["cmd"]) for x in target.transactions]
    assert addrs == [((1 << 19) | 0x10, Command.CONFIG_READ.value),
                     ((1 << 19) | 0x04, Command.CONFIG_WRITE.value),
                     (0x71, Command.IO_READ.value), (0x70, Command.IO_WRITE.value)]
    assert out["cfg"].value == 0                     # BAR0 of a memory BAR before assignment
    assert function_.regs[1] & 0xFFFF == 0x0147
    assert out["io"].value == (0xA500_0000 | 0x1C * 0x0101) >> 8 & 0xFF
    assert target.writes[-1] == (0x1C, 0x8A, 0b1110)
    # The I/O read drove only byte 1: C/BE# = 1101.
    io_start = target.transactions[2]["start"]
    assert target.trace[io_start + 1]["cbe"] == 0b1101


def test_config_read_of_empty_slot_master_aborts():
    r, target = _run_one(TargetScript(config={}), lambda d: d.config_read(5, 0))
    assert (r.status, r.value) == (Outcome.MASTER_ABORT, 0xFFFF_FFFF)


@pytest.mark.parametrize("enabled", [False, True])
def test_read_parity_error_asserts_perr_two_clocks_later(enabled):
    async def op(d):
        await d.configure(perr_enable=enabled)
        return await d.mem_read(0x100, 12)

    r, target = _run_one(TargetScript(bad_parity_phase=1), op, rules={"read_data_parity"})
    assert r.perr == 1
    t0 = _start(target)
    # Data phase 2 moves in clock 4, its PAR comes in clock 5, PERR# in clock 6.
    assert waves(target.trace, t0, 8, ["trdy", "perr"]) == {
        "trdy": "00111000",
        "perr": "00000100" if enabled else "00000000",
    }


def test_bad_commands_are_refused_without_bus_activity():
    async def op(d):
        return [await d.run(Command.MEM_READ, 0x100, 0),
                await d.run(Command.DUAL_ADDRESS, 0x100, 1),
                await d.run(Command.MEM_READ, 0x100, 65, buf_off=0),   # buffer is 64 DWORDs
                await d.run(Command.MEM_WRITE, 0x100, 1000, imm=1)]

    results, target = _run_one(TargetScript(), op)
    assert [r.status for r in results[:3]] == [Outcome.BAD_COMMAND] * 3
    assert results[3].status == Outcome.OK and results[3].dwords == 1000   # imm needs no buffer
    assert len(target.transactions) == 1


def test_64bit_request_on_32bit_bus_is_refused():
    r, target = _run_one(TargetScript(), lambda d: d.run(Command.MEM_READ, 0x100, 2, req64=1))
    assert r.status == Outcome.BAD_COMMAND
    assert target.transactions == []


def test_reserved_command_goes_on_the_bus():
    r, target = _run_one(TargetScript(), lambda d: d.run(Command.RESERVED_4, 0x100, 1, imm=1),
                         rules={"reserved_command"})
    assert target.transactions[0]["cmd"] == Command.RESERVED_4.value
    assert r.status == Outcome.OK


def test_nonblocking_submit_and_wait_in_any_order():
    async def op(d):
        h1 = await d.submit_mem_write(0x100, b"\x01\x02\x03\x04", buf_off=0)
        h2 = await d.submit_mem_read(0x100, 4, buf_off=8)
        h3 = await d.submit_io_read(0x70, 1)
        r3 = await d.wait(h3)
        r2 = await d.wait(h2)
        r1 = await d.wait(h1)
        return r1, r2, r3

    (r1, r2, r3), target = _run_one(TargetScript(), op)
    assert r2.data == b"\x01\x02\x03\x04"
    assert r1.ok and r3.ok and r3.value == 0xA500_1C1C & 0xFF
    assert [x["cmd"] for x in target.transactions] == [Command.MEM_WRITE.value,
                                                      Command.MEM_READ.value, Command.IO_READ.value]


def test_buffer_register_access_is_refused_while_busy():
    async def op(d):
        h = await d.submit(Command.MEM_WRITE, 0x100, 200, imm=1)
        await d.ctl.write(Reg.BUF_DATA, 5)
        status = await d.status()
        await d.wait(h)
        return status

    status, _ = _run_one(TargetScript(), op)
    assert status & STATUS_BUF_REFUSED


# ---- error injection: each knob's broken waveform ----------------------------------------

#: The checker rule each INJECT knob breaks (pcispy/pci/rules.py), and nothing else.
KNOB_RULES = {
    "irdy_drop": "irdy_withdrawn",
    "frame_no_irdy": "frame_without_irdy",
    "frame_reassert": "frame_reasserted",
    "irdy_late": "initiator_latency",
    "addr_parity": "address_parity",
    "wdata_parity": "write_data_parity",
    "wdata_parity64": "data_parity64",
    "no_gnt": "frame_without_gnt",
    "irdy_idle": "irdy_without_frame",
    "req64_mismatch": "req64_frame_mismatch",
    "be_change": "byte_enables_changed_in_wait",
    "wdata_change": "write_data_changed_in_wait",
    "early_abort": "master_abort_early",
    "perr_wrong": "perr_timing",
    "irdy_in_addr": "irdy_in_address_phase",
    "frame_drop_wait": "frame_dropped_in_wait",
    "dac_twice": "dac_after_dac",
    "busy_start": "busy_bus_start",
    "frame_after_stop": "frame_held_after_stop",
    "dac_low": "dac_below_4g",
    "wdata_parity_wait": None,        # a wrong PAR no rule sees: what a target reports early
    "park_no_par": "parked_bus_parity",
    "park_float": "parked_bus_parity",
}


def test_every_knob_names_its_rule():
    assert set(KNOB_RULES) == {name for name, _ in INJECT}


def _knob(name, script, operation, *, width=32, gnt=None):
    async def op(d):
        await d.inject(**{name: 1})
        return await operation(d)
    rule = KNOB_RULES[name]
    r, target = _run_one(script, op, width=width, gnt=gnt, rules={rule} if rule else ())
    return r, target, _start(target)


def _write12(d):
    return d.mem_write(0x100, bytes(range(12)))


def test_inject_a_irdy_dropped_before_its_phase_completed():
    r, target, t0 = _knob("irdy_drop", TargetScript(wait=2), _write12)
    # Phase 2: IRDY# asserted in clock 3, TRDY# not yet, IRDY# gone in clock 4.
    assert waves(target.trace, t0, 10, ["frame", "irdy", "trdy"]) == {
        "frame": "1111100000",
        "irdy":  "0110111100",
        "trdy":  "0100100100",
    }
    assert r.ok and r.phases == 3


def test_inject_b_frame_deasserted_without_irdy():
    r, target, t0 = _knob("frame_no_irdy", TargetScript(),
                          lambda d: d.mem_write(0x100, bytes(range(8)), wait_next=1))
    # FRAME# goes in the wait before the last phase, IRDY# stays deasserted: the bus is
    # idle, the transaction over; the second DWORD follows in a new transaction.
    assert waves(target.trace, t0, 5, ["frame", "irdy"]) == {"frame": "11001", "irdy": "01000"}
    assert r.ok and (r.phases, r.transactions) == (2, 2)
    assert [target.s.memory[(0x100 >> 2) + i] for i in range(2)] == [0x0302_0100, 0x0706_0504]


def test_inject_c_frame_reasserted_in_last_phase():
    r, target, t0 = _knob("frame_reassert", TargetScript(wait=2),
                          lambda d: d.mem_write(0x100, bytes(range(16)), burst=2))
    # The burst limit makes phase 1 the last (FRAME# off in clock 3); while it waits FRAME#
    # comes back (clock 4) and stays: phase 1 completes as a middle phase, phase 2 is the
    # last; the fourth DWORD follows in a new transaction (clock 10).
    assert waves(target.trace, t0, 10, ["frame", "irdy", "trdy"]) == {
        "frame": "1101100001",
        "irdy":  "0111111100",
        "trdy":  "0100100100",
    }
    assert r.ok and (r.phases, r.transactions) == (4, 2)
    assert [target.s.memory[(0x100 >> 2) + i] for i in range(4)] == [
        0x0302_0100, 0x0706_0504, 0x0B0A_0908, 0x0F0E_0D0C]


def test_inject_d_irdy_later_than_8_clocks():
    r, target, t0 = _knob("irdy_late", TargetScript(), _write12)
    assert waves(target.trace, t0, 14, ["frame", "irdy"]) == {
        "frame": "11111111111100",
        "irdy":  "00000000001110",
    }


def test_inject_f_address_parity():
    r, target, t0 = _knob("addr_parity", TargetScript(), _write12)
    tr = target.trace
    assert tr[t0 + 1]["par"] == parity(tr[t0]["ad"], tr[t0]["cbe"]) ^ 1
    assert [tr[t0 + i + 1]["par"] == parity(tr[t0 + i]["ad"], tr[t0 + i]["cbe"])
            for i in (1, 2, 3)] == [True] * 3


def test_inject_g_write_data_parity():
    r, target, t0 = _knob("wdata_parity", TargetScript(), _write12)
    tr = target.trace
    assert [tr[t0 + i + 1]["par"] == parity(tr[t0 + i]["ad"], tr[t0 + i]["cbe"])
            for i in (0, 1, 2, 3)] == [True, False, False, False]


def test_inject_h_write_data_par64():
    r, target, t0 = _knob("wdata_parity64", TargetScript(ack64=True),
                          lambda d: d.mem_write(0x100, bytes(range(16)), width=64), width=64)
    tr = target.trace
    assert [tr[t0 + i + 1]["par64"] == parity(tr[t0 + i]["ad_hi"], tr[t0 + i]["cbe_hi"])
            for i in (0, 1, 2)] == [True, False, False]
    assert [tr[t0 + i + 1]["par"] == parity(tr[t0 + i]["ad"], tr[t0 + i]["cbe"])
            for i in (0, 1, 2)] == [True] * 3


def test_inject_i_frame_without_gnt():
    async def no_gnt(ctx, h):
        ctx.set(h.gnt, 0)

    r, target, t0 = _knob("no_gnt", TargetScript(), _write12, gnt=no_gnt)
    assert r.ok and r.transactions == 1          # ignoring GNT# also ignores the timer
    assert [target.trace[t0 + i]["gnt"] for i in (-1, 0)] == [0, 0]
    assert target.trace[t0]["frame"] == 1


def test_inject_j_irdy_on_idle_bus():
    r, target, t0 = _knob("irdy_idle", TargetScript(), _write12)
    assert waves(target.trace, t0 - 4, 5, ["frame", "irdy"]) == {"frame": "00001", "irdy": "01000"}


def test_inject_k_req64_not_mirroring_frame():
    r, target, t0 = _knob("req64_mismatch", TargetScript(ack64=True),
                          lambda d: d.mem_write(0x100, bytes(24), width=64), width=64)
    assert waves(target.trace, t0, 4, ["frame", "req64"]) == {"frame": "1110", "req64": "1000"}


def test_inject_l_byte_enables_change_during_wait():
    r, target, t0 = _knob("be_change", TargetScript(wait=2), _write12)
    assert [target.trace[t0 + i]["cbe"] for i in range(8)] == [7, 0, 0, 1, 1, 0, 1, 1]


def test_inject_m_write_data_changes_during_wait():
    r, target, t0 = _knob("wdata_change", TargetScript(wait=2), _write12)
    assert [target.trace[t0 + i]["ad"] for i in range(1, 8)] == [
        0x0302_0100, 0x0706_0504, 0x0706_0505, 0x0706_0505, 0x0B0A_0908, 0x0B0A_0909, 0x0B0A_0909]


def test_inject_n_master_abort_before_clock_5():
    # One DWORD: FRAME# is deasserted from clock 2 (a longer write would also drop FRAME#
    # while IRDY# waits, before the master abort's window).
    r, target, t0 = _knob("early_abort", TargetScript(devsel_clock=None),
                          lambda d: d.mem_write(0x100, bytes(4)))
    assert r.status == Outcome.MASTER_ABORT
    assert waves(target.trace, t0, 6, ["frame", "irdy"]) == {"frame": "100000", "irdy": "011000"}


def test_inject_o_perr_at_a_wrong_time():
    r, target, t0 = _knob("perr_wrong", TargetScript(), _write12)
    assert waves(target.trace, t0, 6, ["perr"]) == {"perr": "010000"}


def test_inject_q_irdy_in_address_phase():
    r, target, t0 = _knob("irdy_in_addr", TargetScript(), _write12)
    assert waves(target.trace, t0, 5, ["frame", "irdy"]) == {"frame": "11100", "irdy": "11110"}
    assert r.ok and r.phases == 3


def test_inject_r_frame_dropped_while_irdy_waits():
    r, target, t0 = _knob("frame_drop_wait", TargetScript(wait=2), _write12)
    # Phase 1 waits for TRDY#: FRAME# goes in its second clock with IRDY# still asserted;
    # the third DWORD follows in a second transaction.
    assert waves(target.trace, t0, 6, ["frame", "irdy", "trdy"]) == {
        "frame": "111000",
        "irdy":  "011110",
        "trdy":  "010010",
    }
    assert r.ok and (r.phases, r.transactions) == (3, 2)
    assert [target.s.memory[(0x100 >> 2) + i] for i in range(3)] == [
        0x0302_0100, 0x0706_0504, 0x0B0A_0908]


def test_inject_s_dac_after_dac():
    r, target, t0 = _knob("dac_twice", TargetScript(devsel_clock=None),
                          lambda d: d.mem_write(0x1_0000_0100, bytes(4)))
    assert [target.trace[t0 + i]["cbe"] for i in (0, 1)] == [Command.DUAL_ADDRESS.value] * 2
    assert [target.trace[t0 + i]["ad"] for i in (0, 1)] == [0x100, 0x1]
    assert r.status == Outcome.MASTER_ABORT


def test_inject_t_busy_start_right_after_another_masters_last_phase():
    """Another master (played by hand) writes one DWORD; GNT# moves to the initiator during
    that transaction (hidden arbitration). With the knob it starts in the clock right
    after the other's final data phase, whose IRDY# is still asserted, instead of after the
    idle clock: a fast back-to-back start only the other master may make."""
    async def other_master(ctx, h):
        def put(**lines):
            for name, (o, oe) in h.o.items():
                value = lines.get(name)
                ctx.set(oe, value is not None)
                ctx.set(o, value or 0)

        ctx.set(h.gnt, 0)
        await ctx.tick().repeat(2)                  # the initiator stops parking
        ctx.set(h.o_gnt, 1)
        await ctx.tick()
        put(ad=0, cbe=0)                            # the other master parks
        await ctx.tick()
        put(ad=0, cbe=0, par=0)
        while not ctx.get(h.dut.bus.req.o):         # the initiator waits for GNT#
            await ctx.tick()
        await ctx.tick().repeat(2)
        put(frame=1, irdy=0, ad=0x200, cbe=Command.MEM_WRITE.value, par=0)  # address phase
        await ctx.tick()
        ctx.set(h.o_gnt, 0)
        ctx.set(h.gnt, 1)                           # hidden arbitration: GNT# moves now
        put(frame=0, irdy=1, ad=0x1234_5678, cbe=0,                        # last data phase
            par=parity(0x200, Command.MEM_WRITE.value))
        await ctx.tick()
        put(irdy=0, par=parity(0x1234_5678, 0))     # IRDY# driven deasserted, then released
        await ctx.tick()
        put()

    async def op(d):
        await d.inject(busy_start=1)
        return await d.mem_write(0x100, bytes(4))

    box = {}

    async def bench(ctx, drv, target, h):
        box["r"] = await op(drv)
        await ctx.tick().repeat(4)

    target = run_bench(bench, TargetScript(), gnt=other_master, checked=True)
    other, mine = target.transactions
    t0 = other["start"]
    assert mine["start"] - t0 == 2 and (mine["addr"], other["addr"]) == (0x100, 0x200)
    tr = target.trace
    assert waves(tr, t0, 5, ["frame", "irdy", "trdy", "gnt"]) == {
        "frame": "10100", "irdy": "01010", "trdy": "01010", "gnt": "01111"}
    # The drivers that meet without a turnaround: FRAME#, AD, C/BE# (the other master in
    # its last data phase, the initiator's address phase right after), IRDY# (the other
    # drives it deasserted in that address phase, the initiator from the next clock),
    # PAR (the other's covers its last data, the initiator's its address).
    assert driver_problems(tr) == [
        f"clock {t0 + 2}: {line} driven by oe right after o_oe" for line in ("ad", "cbe", "frame")
    ] + [f"clock {t0 + 3}: {line} driven by oe right after o_oe" for line in ("par", "irdy")]
    assert target.rules == {"busy_bus_start"}
    assert box["r"].ok


def test_inject_u_frame_held_after_stop():
    r, target, t0 = _knob("frame_after_stop", TargetScript(disconnect_after=2),
                          lambda d: d.mem_write(0x100, bytes(range(16))))
    # Phase 1 completes with TRDY# and STOP# in clock 3; FRAME# stays asserted (with IRDY#)
    # in clock 4, a data phase that completes with STOP# alone; clock 5 is the last.
    assert waves(target.trace, t0, 6, CTRL) == {
        "frame":  "111100",
        "irdy":   "011110",
        "devsel": "011110",
        "trdy":   "011000",
        "stop":   "001110",
    }
    assert r.ok and (r.phases, r.transactions, r.disconnects) == (4, 2, 2)
    assert [target.s.memory[(0x100 >> 2) + i] for i in range(4)] == [
        0x0302_0100, 0x0706_0504, 0x0B0A_0908, 0x0F0E_0D0C]


def test_inject_v_dac_below_4gib():
    r, target, t0 = _knob("dac_low", TargetScript(devsel_clock=3),
                          lambda d: d.mem_write(0x100, bytes([1, 2, 3, 4])))
    tr = target.trace
    assert [(tr[t0 + i]["ad"], tr[t0 + i]["cbe"]) for i in (0, 1)] == [
        (0x100, Command.DUAL_ADDRESS.value), (0, Command.MEM_WRITE.value)]
    assert target.transactions[0]["addr"] == 0x100 and r.ok
    assert target.s.memory[0x100 >> 2] == 0x0403_0201


def test_inject_w_write_parity_wrong_only_while_waiting():
    # PAR is checked after a transfer only: the wrong PAR of the waits breaks no rule on
    # its own (it gives a target a parity error to report early, see the target's tests).
    r, target, t0 = _knob("wdata_parity_wait", TargetScript(initial_wait=2),
                          lambda d: d.mem_write(0x100, bytes(range(4))))
    tr = target.trace
    # IRDY# from clock 2, TRDY# in clock 4: PAR of clocks 3 and 4 (covering the waits) is
    # wrong, PAR of clock 5 (covering the completion) right.
    assert waves(tr, t0, 5, ["irdy", "trdy"]) == {"irdy": "01110", "trdy": "00010"}
    assert [tr[t0 + i + 1]["par"] == parity(tr[t0 + i]["ad"], tr[t0 + i]["cbe"])
            for i in (0, 1, 2, 3)] == [True, False, False, True]


# ---- who drives what, clock by clock (PCI LB 3.0 §2.1, §3.3.1, §3.4.3) -------------------

def test_master_releases_frame_and_irdy_at_their_clocks():
    r, target = _run_one(TargetScript(devsel_clock=2), lambda d: d.mem_write(0x100, bytes(4)))
    t0 = _start(target)
    tr = target.trace
    # Clock 2 is the only (last) data phase: FRAME# driven deasserted there, released in
    # clock 3 (the idle clock); IRDY# not driven in the address phase (its turnaround),
    # asserted in clock 2, driven deasserted in clock 3, released in clock 4.
    assert waves(tr, t0, 4, ["frame", "irdy"]) == {"frame": "1000", "irdy": "0100"}
    assert enables(tr, t0 - 1, 5, ["frame", "irdy"]) == {"frame": "01100", "irdy": "00110"}


def test_master_lines_of_a_burst_read():
    r, target = _run_one(TargetScript(devsel_clock=2), lambda d: d.mem_read(0x100, 8))
    t0 = _start(target)
    tr = target.trace
    assert waves(tr, t0, 5, ["frame", "irdy", "trdy"]) == {
        "frame": "11100", "irdy": "01110", "trdy": "00110"}
    # FRAME# through the last data phase (clock 4), IRDY# from clock 2 through clock 5.
    assert enables(tr, t0, 6, ["frame", "irdy"]) == {"frame": "111100", "irdy": "011110"}
    # AD: the initiator's in the address phase (it was parked before: no gap), released
    # from clock 2; the target's from clock 3 through the last data phase; nobody's in the
    # idle clock (5); parked again from clock 6. C/BE# is the initiator's throughout the
    # transaction, released in the idle clock.
    assert enables(tr, t0 - 1, 8, ["ad", "cbe", "par"]) == {
        "ad":  "11000011", "cbe": "11111011", "par": "11100001"}
    assert enables(tr, t0 - 1, 8, ["ad", "par"], who="t_oe") == {
        "ad":  "00011000", "par": "00001100"}


def test_64bit_master_lines_and_req64():
    r, target = _run_one(TargetScript(ack64=True),
                         lambda d: d.mem_write(0x100, bytes(range(16)), width=64), width=64)
    t0 = _start(target)
    tr = target.trace
    assert waves(tr, t0, 4, ["frame", "req64", "irdy"]) == {
        "frame": "1100", "req64": "1100", "irdy": "0110"}
    # REQ64# follows FRAME#'s drivers; the 64-bit extension only in the transaction (it is
    # not parked), PAR64 one clock after AD[63:32].
    assert enables(tr, t0 - 1, 6, ["frame", "req64", "ad_hi", "cbe_hi", "par64", "ad"]) == {
        "frame": "011100", "req64": "011100", "ad_hi": "011100", "cbe_hi": "011100",
        "par64": "001110", "ad": "111101"}


def test_perr_driven_deasserted_one_clock_then_released():
    async def op(d):
        await d.configure(perr_enable=True)
        return await d.mem_read(0x100, 12)

    r, target = _run_one(TargetScript(bad_parity_phase=1), op, rules={"read_data_parity"})
    t0 = _start(target)
    assert waves(target.trace, t0, 9, ["perr"]) == {"perr": "000001000"}
    assert enables(target.trace, t0, 9, ["perr"]) == {"perr": "000001100"}


def _gnt_steps(*steps):
    """A GNT# script: ``(clocks, level)`` steps, the last level held."""
    async def gnt(ctx, h):
        for clocks, level in steps:
            ctx.set(h.gnt, level)
            await ctx.tick().repeat(clocks)
    return gnt


def _edges(trace, line):
    """Clocks where ``line`` rises and where it falls."""
    rises = [i for i in range(1, len(trace)) if trace[i][line] and not trace[i - 1][line]]
    falls = [i for i in range(1, len(trace)) if not trace[i][line] and trace[i - 1][line]]
    return rises, falls


@pytest.mark.parametrize("width", [32, 64])
def test_parks_on_idle_bus_while_granted(width):
    async def bench(ctx, drv, target, h):
        await ctx.tick().repeat(40)

    target = run_bench(bench, TargetScript(), width=width, checked=True,
                       gnt=_gnt_steps((6, 0), (10, 1), (6, 0), (10, 1)))
    _clean(target)
    assert target.rules == set()
    tr = target.trace
    (k, k2), falls = _edges(tr, "gnt")
    (j,) = [fall for fall in falls if fall > k]
    for rise in (k, k2):
        # GNT# seen asserted on an idle bus in clock K: AD and C/BE# from K + 1 (to zero),
        # PAR from K + 2 (even parity of them: 0).
        assert enables(tr, rise - 1, 5, ["ad", "cbe", "par"]) == {
            "ad": "00111", "cbe": "00111", "par": "00011"}
        assert (tr[rise + 1]["ad"], tr[rise + 1]["cbe"], tr[rise + 2]["par"]) == (0, 0, 0)
    # GNT# seen deasserted in clock J: AD and C/BE# float from J + 1, PAR from J + 2.
    assert enables(tr, j - 1, 5, ["ad", "cbe", "par"]) == {
        "ad": "11000", "cbe": "11000", "par": "11100"}
    assert (tr[j + 1]["ad"], tr[j + 2]["par"]) == (0xFFFF_FFFF, 1)
    if width == 64:
        # The 64-bit extension is never parked.
        assert not any(c["oe"][n] for c in tr for n in ("ad_hi", "cbe_hi", "par64", "req64"))


def test_parked_master_starts_without_a_gap_and_parks_after_the_idle_clock():
    r, target = _run_one(TargetScript(), lambda d: d.mem_write(0x100, bytes(4)))
    t0 = _start(target)
    # Parked (GNT# held, bus idle) before the address phase: AD and C/BE# stay driven into
    # it; released in the idle clock after the data phase (clock 3: FRAME# and IRDY# are
    # seen deasserted there for the first time), parked again from clock 4.
    assert enables(target.trace, t0 - 2, 6, ["ad", "cbe", "par"]) == {
        "ad": "111101", "cbe": "111101", "par": "111110"}


def test_no_parking_without_gnt_after_a_transaction():
    async def gnt(ctx, h):
        while not ctx.get(h.bus["frame"]):
            await ctx.tick()
        ctx.set(h.gnt, 0)            # removed in the address phase, never back

    r, target = _run_one(TargetScript(), lambda d: d.mem_write(0x100, bytes(8)), gnt=gnt,
                         settle=10)
    t0 = _start(target)
    assert r.ok
    assert enables(target.trace, t0, 8, ["ad", "cbe"]) == {"ad": "11100000", "cbe": "11100000"}


@pytest.mark.parametrize("knob", ["park_no_par", "park_float"])
def test_inject_x_y_parked_bus_left_floating(knob):
    async def bench(ctx, drv, target, h):
        await drv.inject(**{knob: 1})
        await ctx.tick().repeat(10)
        box["r"] = await drv.mem_write(0x100, bytes(4))
        await ctx.tick().repeat(10)

    box = {}
    target = run_bench(bench, TargetScript(), checked=True)
    tr = target.trace
    t0 = _start(target)
    _clean(target, par_follows_ad=False)
    assert target.rules == {"parked_bus_parity"}
    idle = range(t0 - 6, t0)
    # (x) AD and C/BE# parked, PAR floats (reads 1 where the parked AD/C/BE# need 0);
    # (y) nothing parked at all. The transaction's own PAR is there in both.
    assert all(tr[i]["oe"]["ad"] == (knob == "park_no_par") for i in idle)
    assert not any(tr[i]["oe"]["par"] for i in idle)
    assert [tr[i]["par"] for i in idle] == [1] * 6
    assert enables(tr, t0, 3, ["par"]) == {"par": "011"}
    assert box["r"].ok


# ---- randomised IRDY# waits ----------------------------------------------------------------

@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [1, 0x1234_5678, 0xDEAD_BEEF])
def test_random_irdy_waits_move_the_right_data(seed):
    payload = bytes((seed >> (i % 24) ^ i * 37) & 0xFF for i in range(64))

    async def op(d):
        await d.configure(seed=seed)
        w = await d.mem_write(0x400, payload, wait_rand=3)
        r = await d.mem_read(0x400, len(payload), wait_rand=3, buf_off=32)
        return w, r

    def run():
        (w, r), target = _run_one(TargetScript(wait=1), op)
        return w, r, target

    w, r, target = run()
    assert r.data == payload, f"seed {seed:#x}"
    gaps, gap = [], 0
    start = _start(target)
    for previous, clock in zip(target.trace[start:], target.trace[start + 1:]):
        if clock["frame"] and not previous["frame"]:
            gap = 0                                  # an address phase
        elif clock["frame"] and not clock["irdy"]:
            gap += 1
        elif clock["irdy"]:
            if gap:
                gaps.append(gap)
            gap = 0
    assert gaps and max(gaps) <= 3, f"seed {seed:#x}: IRDY# gaps {gaps}"
    # Same seed, same bus: the randomness is reproducible.
    w2, r2, target2 = run()
    assert (w2.clocks, r2.clocks) == (w.clocks, r.clocks), f"seed {seed:#x}"


# ---- interrupt responder ---------------------------------------------------------------------

async def _interrupt(ctx, h, target, ack_dword):
    """Pull INTA# until the acknowledge write reaches the target, then release it."""
    before = sum(1 for w in target.writes if w[0] == ack_dword)
    ctx.set(h.inta, 1)
    while sum(1 for w in target.writes if w[0] == ack_dword) == before:
        await ctx.tick()
    ctx.set(h.inta, 0)


def test_interrupt_responder_fixed_delay_and_checkpoints():
    box = {}

    async def bench(ctx, drv, target, h):
        irq = InterruptResponderDriver(PysimControl(ctx, h.responder.ctl))
        await irq.configure(ack_addr=0x500, ack_value=0x1, delay=10, checkpoints=(5, 20),
                            ckpt_addr=0x600, ckpt_value=0x100)
        await _interrupt(ctx, h, target, 0x500 >> 2)
        await irq.ctl.wait_event()
        box["entries"] = await irq.entries()
        box["count"] = await irq.count()

    target = run_bench(bench, TargetScript(), responder=True)
    _clean(target)
    assert target.writes == [(0x140, 0x1, 0), (0x180, 0x100, 0), (0x180, 0x101, 0)]
    starts = [x["start"] for x in target.transactions]
    # Ack: request at t_irq + 10, then CHECK, ARB, address phase; done 3 clocks later.
    # Checkpoint k: requested once t_ack + offset[k] has passed, address phase 4 clocks on.
    assert [s - starts[0] for s in starts] == [0, 12, 27]
    (entry,) = box["entries"]
    assert entry["delay"] == 10
    assert (entry["t_ack"] - entry["t_irq"], entry["t_ckpt"] - entry["t_irq"]) == (17, 44)
    assert box["count"] == 1


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [3, 0xC0FFEE])
def test_interrupt_responder_uniform_delays(seed):
    def run():
        box = {}

        async def bench(ctx, drv, target, h):
            irq = InterruptResponderDriver(PysimControl(ctx, h.responder.ctl))
            await irq.configure(ack_addr=0x500, ack_value=seed, delay_range=(20, 60), seed=seed)
            for _ in range(5):
                await _interrupt(ctx, h, target, 0x500 >> 2)
                await ctx.tick().repeat(3)
            box["entries"] = await irq.entries()

        run_bench(bench, TargetScript(), responder=True)
        return box["entries"]

    entries = run()
    delays = [e["delay"] for e in entries]
    assert len(entries) == 5 and all(20 <= d <= 60 for d in delays), f"seed {seed:#x}: {delays}"
    assert len(set(delays)) > 1, f"seed {seed:#x}: {delays}"
    assert all(e["t_ack"] - e["t_irq"] == e["delay"] + 7 for e in entries), f"seed {seed:#x}"
    assert [e["delay"] for e in run()] == delays, f"seed {seed:#x}: not reproducible"


def test_interrupt_responder_takes_a_level_that_stays_asserted_again():
    # INTA# never deasserts (the device raised a new interrupt in the clock the acknowledge
    # took effect): a level-sensitive host delivers it again at the end of the interrupt,
    # END_OF_INTERRUPT_CLOCKS after the handler's last write; it is not lost.
    box = {}

    async def bench(ctx, drv, target, h):
        irq = InterruptResponderDriver(PysimControl(ctx, h.responder.ctl))
        await irq.configure(ack_addr=0x500, ack_value=0x1, delay=10)
        ctx.set(h.inta, 1)
        while sum(1 for w in target.writes if w[0] == 0x500 >> 2) < 2:
            await ctx.tick()
        ctx.set(h.inta, 0)
        await ctx.tick().repeat(5)
        box["entries"] = await irq.entries()

    target = run_bench(bench, TargetScript(), responder=True)
    _clean(target)
    first, second = box["entries"]
    assert first["t_ack"] - first["t_irq"] == second["t_ack"] - second["t_irq"] == 17
    # The last write done in clock t_ckpt; LOG, REARM until the end of interrupt, ARMED.
    assert second["t_irq"] - first["t_ckpt"] == END_OF_INTERRUPT_CLOCKS + 1


def test_interrupt_responder_refuses_bad_settings():
    box = {}

    async def bench(ctx, drv, target, h):
        irq = InterruptResponderDriver(PysimControl(ctx, h.responder.ctl))
        with pytest.raises(ValueError, match="refused delay range 50..10"):
            await irq.configure(ack_addr=0x500, ack_value=1, delay_range=(50, 10))
        box["max"] = await irq.ctl.read(IrqReg.DELAY_MAX)

    run_bench(bench, TargetScript(), responder=True)
    assert box["max"] == 0


# ---- firmware enumeration ----------------------------------------------------------------

def test_enumerate_bus_sizes_assigns_and_enables():
    device = ConfigFunction(0x1234, 0xABCD, 0x118000,
                            [("mem", 4096), ("mem-pf", 1 << 20), ("io", 256), ("mem64", 1 << 16)])

    functions, target = _run_one(TargetScript(config={2: device}),
                                 lambda d: enumerate_bus(d, [0, 2]))
    (found,) = functions
    assert (found.slot, found.vendor, found.device, found.class_code) == (2, 0x1234, 0xABCD, 0x118000)
    assert [(b.index, b.kind, b.size, b.address, b.prefetchable, b.is64) for b in found.bars] == [
        (0, "memory", 4096, 0x8000_0000, False, False),
        (1, "memory", 1 << 20, 0x8010_0000, True, False),
        (2, "io", 256, 0x1000, False, False),
        (3, "memory", 1 << 16, 0x8020_0000, False, True),
    ]
    assert device.regs[4:9] == [0x8000_0000, 0x8010_0008, 0x1001, 0x8020_0004, 0]
    assert found.command == COMMAND_ENABLES == 0x147
    # Slot 0 is empty: its Vendor ID read ends in a master abort.
    first = target.transactions[0]
    assert first["addr"] == 1 << 16 and first["cmd"] == Command.CONFIG_READ.value


# ---- the cocotb backdoor path of the driver ---------------------------------------------

class _DeferredCell:
    """A cocotb-like memory word: a write lands only when the time step ends."""
    def __init__(self, cells, index):
        self.cells, self.index = cells, index

    @property
    def value(self):
        return self.cells.now.get(self.index, 0)

    @value.setter
    def value(self, v):
        self.cells.pending[self.index] = v


class _DeferredStorage:
    def __init__(self):
        self.now, self.pending = {}, {}

    def __getitem__(self, index):
        return _DeferredCell(self, index)

    def settle(self):
        self.now.update(self.pending)
        self.pending.clear()


@pytest.mark.parametrize("width", [32, 64])
def test_driver_backdoor_writes_each_word_once(width):
    import asyncio
    from types import SimpleNamespace
    from pcispy.sim.bfm.initiator_control import BUFFER_PATH
    from pcispy.sim.bfm.initiator_driver import InitiatorDriver

    storage = _DeferredStorage()
    handle = storage
    for name in reversed(BUFFER_PATH):
        handle = SimpleNamespace(**{name: handle})
    driver = InitiatorDriver(SimpleNamespace(backdoor=handle), width=width)

    async def scenario():
        await driver.buffer_write(1, [0x1111_1111, 0x2222_2222, 0x3333_3333])
        storage.settle()
        await driver.buffer_write(0, [0xAAAA_AAAA])
        storage.settle()
        return await driver.buffer_read(0, 4)

    assert asyncio.run(scenario()) == [0xAAAA_AAAA, 0x1111_1111, 0x2222_2222, 0x3333_3333]
    if width == 64:
        assert storage.now == {0: 0x1111_1111_AAAA_AAAA, 1: 0x3333_3333_2222_2222}
