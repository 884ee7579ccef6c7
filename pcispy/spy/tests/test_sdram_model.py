# SPDX-License-Identifier: BSD-2-Clause
"""The SDRAM model (pcispy/sim/bfm/sdram.py) driven pin by pin in Amaranth's simulator: the
data sheet's initialisation, bursts with CAS latency 2 and 3, byte masks, and each timing
or state rule broken on purpose is caught under its own name and no other."""

import pytest
from amaranth.sim import Simulator

from pcispy.sim.bfm.sdram import SDRAMModel, Violation, violation_names

#: t_rc above t_ras + t_rp, so that each of the three can be broken alone.
TIMING = dict(t_rcd=2, t_ras=5, t_rp=2, t_rc=8, t_rrd=2, t_wr=2, t_rfc=7, t_mrd=2)
POWER_UP = 4
#: Pin levels (RAS#, CAS#, WE#) of each command.
PINS = {"nop": (1, 1, 1), "active": (0, 1, 1), "read": (1, 0, 1), "write": (1, 0, 0),
        "bst": (1, 1, 0), "precharge": (0, 1, 0), "refresh": (0, 0, 1), "mode": (0, 0, 0)}


def mode_word(burst_length=8, cas_latency=2, single_writes=False):
    return ({1: 0, 2: 1, 4: 2, 8: 3}[burst_length] | cas_latency << 4
            | int(single_writes) << 9)


def init_script(cas_latency=2, refreshes=2):
    """The data sheet's initialisation as (command, arguments, clocks after)."""
    script = [("nop", {}, POWER_UP), ("precharge", {"a": 1 << 10}, TIMING["t_rp"])]
    script += [("refresh", {}, TIMING["t_rfc"])] * refreshes
    script.append(("mode", {"a": mode_word(cas_latency=cas_latency)}, TIMING["t_mrd"]))
    return script


def run(script, *, refresh_interval=1000, watch=None, peek=range(16), **kwargs):
    """Play ``script`` ((command, {pin: value}, clocks)) into a model: each command takes a
    clock, ``clocks`` includes it (0 = the next command follows at once). ``watch(ctx,
    dut)`` runs each clock after the edge. Returns the model and its evidence, with the
    words at the storage indices ``peek`` (the backdoor)."""
    dut = SDRAMModel(row_bits=4, col_bits=9, power_up=POWER_UP,
                     refresh_interval=refresh_interval, **TIMING, **kwargs)
    result = {}

    async def bench(ctx):
        ctx.set(dut.cke, 1)
        for command, pins, clocks in script:
            ras, cas, we = PINS[command]
            ctx.set(dut.ras_n, ras)
            ctx.set(dut.cas_n, cas)
            ctx.set(dut.we_n, we)
            ctx.set(dut.cs_n, 0)
            for name in ("ba", "a", "dqm", "dq_i", "dq_driven", "cke"):
                ctx.set(getattr(dut, name), pins.get(name, 1 if name == "cke" else 0))
            for clock in range(max(clocks, 1)):
                await ctx.tick()
                if watch:
                    watch(ctx, dut)
                # After the command's clock: NOP, with what the pins carry otherwise.
                ctx.set(dut.ras_n, 1)
                ctx.set(dut.cas_n, 1)
                ctx.set(dut.we_n, 1)
                data = pins.get("burst")
                if data and clock + 1 < len(data):
                    ctx.set(dut.dq_i, data[clock + 1])
                else:
                    ctx.set(dut.dq_driven, 0)
        for _ in range(4):
            await ctx.tick()
            if watch:
                watch(ctx, dut)
        result.update(flags=ctx.get(dut.flags), errors=ctx.get(dut.errors),
                      refreshes=ctx.get(dut.refreshes), ready=ctx.get(dut.ready),
                      counts=[ctx.get(dut.counts[v]) for v in Violation])
        if dut.storage is not None:
            result["words"] = {i: ctx.get(dut.storage.data[i]) for i in peek}

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return dut, result


def write_burst(col, words, bank=0, dqm=0):
    return ("write", {"ba": bank, "a": col, "dq_i": words[0], "dq_driven": 1, "dqm": dqm,
                      "burst": words}, len(words))


@pytest.mark.parametrize("cas_latency", [2, 3])
def test_bursts_write_and_read_back_after_cas_latency(cas_latency):
    words = [0x1111 * (i + 1) & 0xFFFF for i in range(8)]
    seen = []
    clock = [0]

    def watch(ctx, dut):
        clock[0] += 1
        if ctx.get(dut.dq_oe):
            # Driven after this edge: sampled at the next one.
            seen.append((clock[0] + 1, ctx.get(dut.dq_o)))

    script = init_script(cas_latency) + [
        ("active", {"ba": 0, "a": 3}, TIMING["t_rcd"]),
        write_burst(8, words),
        ("nop", {}, TIMING["t_wr"]),
        ("read", {"ba": 0, "a": 13}, 12),      # starts inside the block: wraps at 16
    ]
    base = 3 << 9           # bank 0, row 3, column 0
    dut, result = run(script, watch=watch, peek=range(base + 8, base + 16))
    assert result["flags"] == 0, violation_names(result["flags"])
    assert result["ready"] == 1 and result["refreshes"] == 2
    assert dut.word_address(0, 3, 8) == base + 8
    assert [result["words"][base + 8 + i] for i in range(8)] == words
    # The read command is issued at the clock after the last NOP: its edge is the one
    # after `before`; word i is on DQ for the edge CL + i after it.
    before = sum(max(c, 1) for _, _, c in script[:-1])
    read_edge = before + 1
    order = [13, 14, 15, 8, 9, 10, 11, 12]
    assert seen == [(read_edge + cas_latency + i, words[column - 8])
                    for i, column in enumerate(order)]


def test_byte_masks_and_backdoor():
    words = [0xA0A0 + i for i in range(8)]
    script = init_script() + [
        ("active", {"ba": 0, "a": 0}, TIMING["t_rcd"]),
        write_burst(0, words),
        ("nop", {}, TIMING["t_wr"]),
        ("write", {"ba": 0, "a": 8, "dq_i": 0x1234, "dqm": 0b10, "dq_driven": 1}, 1),
        ("bst", {}, 1),
    ]
    dut, result = run(script)
    assert result["flags"] == 0, violation_names(result["flags"])
    assert [result["words"][i] for i in range(8)] == words
    assert result["words"][8] == 0x0034       # the upper byte masked
    assert result["words"][9] == 0            # the burst terminated


#: Each case: a script after initialisation breaking one rule, and the rule.
BROKEN = {
    Violation.T_RCD: [("active", {"ba": 1, "a": 2}, 1), ("read", {"ba": 1}, 12)],
    Violation.READ_CLOSED_BANK: [("read", {"ba": 2}, 12)],
    Violation.WRITE_CLOSED_BANK: [("write", {"ba": 2}, 12)],
    Violation.ACTIVE_OPEN_BANK: [("active", {"ba": 1}, 8), ("active", {"ba": 1}, 1)],
    Violation.T_RAS: [("active", {"ba": 1}, 3), ("precharge", {"ba": 1}, 1)],
    Violation.T_RP: [("active", {"ba": 1}, 8), ("precharge", {"ba": 1}, 1),
                     ("active", {"ba": 1}, 1)],
    Violation.T_RC: [("active", {"ba": 1}, 5), ("precharge", {"ba": 1}, 2),
                     ("active", {"ba": 1}, 1)],
    Violation.T_RRD: [("active", {"ba": 1}, 1), ("active", {"ba": 2}, 1)],
    Violation.T_WR: [("active", {"ba": 1}, 8), ("write", {"ba": 1, "dq_driven": 1}, 8),
                     ("precharge", {"ba": 1}, 1)],
    Violation.T_RFC: [("refresh", {}, 3), ("active", {"ba": 1}, 1)],
    Violation.T_MRD: [("mode", {"a": mode_word()}, 1), ("active", {"ba": 1}, 1)],
    Violation.BANKS_NOT_IDLE: [("active", {"ba": 1}, 8), ("refresh", {}, 8)],
    Violation.MODE: [("mode", {"a": mode_word() | 7}, 4)],      # full page
    Violation.UNSUPPORTED: [("active", {"ba": 1}, 2), ("read", {"ba": 1, "a": 1 << 10}, 12)],
    Violation.CONTENTION: [("active", {"ba": 1}, 2), ("read", {"ba": 1}, 2),
                           ("nop", {"dq_driven": 1}, 2)],
}


@pytest.mark.parametrize("violation", list(BROKEN), ids=lambda v: v.name)
def test_each_rule_broken_is_named(violation):
    script = init_script() + BROKEN[violation]
    _, result = run(script)
    assert violation_names(result["flags"]) == [violation.name]
    assert result["counts"][violation] >= 1 and result["errors"] >= 1


def test_a_command_during_power_up_and_access_before_initialisation():
    _, result = run([("nop", {}, 1), ("precharge", {"a": 1 << 10}, 2)])
    assert violation_names(result["flags"]) == ["POWER_UP"]
    _, result = run([("nop", {}, POWER_UP), ("precharge", {"a": 1 << 10}, 2),
                     ("mode", {"a": mode_word()}, 2), ("active", {"ba": 0}, 1)])
    assert violation_names(result["flags"]) == ["NOT_INITIALISED"]


def test_refresh_deadline():
    # Refreshes exactly every interval keep the rule; one clock later each time breaks it.
    interval = 40
    kept = init_script() + [("refresh", {}, interval)] * 4 + [("refresh", {}, 1)]
    _, result = run(kept, refresh_interval=interval)
    assert result["flags"] == 0, violation_names(result["flags"])
    late = init_script() + [("nop", {}, interval + 1), ("refresh", {}, interval + 1)]
    _, result = run(late, refresh_interval=interval)
    assert violation_names(result["flags"]) == ["REFRESH_LATE"]
    assert result["counts"][Violation.REFRESH_LATE] == 2
