# SPDX-License-Identifier: BSD-2-Clause
"""The SDRAM trace memory (pcispy/spy/sdram.py) against the SDRAM model written from the
data sheet (pcispy/sim/bfm/sdram.py), in Amaranth's simulator: whole slots written and
read back across rows, refresh on time under continuous writes, the FIFO filling."""

import gc
import random
from dataclasses import replace
import warnings

import pytest
from amaranth.hdl import (ClockDomain, ClockSignal, DomainRenamer, Module, ResetSignal,
                          UnusedElaboratable)
from amaranth.sim import Simulator

from pcispy.platform.boards.ulx3s import SDRAM_CLOCK_MHZ
from pcispy.sim.bfm.sdram import SDRAMModel, attach, violation_names
from pcispy.spy.sdram import (SDRAMTiming, SDRAMTraceMemory, board_clock_phase, board_margins,
                               board_read_delay)

#: A small part (4 banks x 16 rows x 512 columns: 4096 slots) with a short power-up and
#: a scaled refresh deadline.
TIMING = SDRAMTiming(row_bits=4, power_up=10, refresh_interval=200)


def _system(timing, fifo_depth, inverted_clock=False, domain=None, shifted_clock=False):
    m = Module()
    m.submodules.ctrl = ctrl = SDRAMTraceMemory(timing, fifo_depth=fifo_depth, domain=domain)
    model = SDRAMModel(**timing.model_args())
    if domain:
        # The SDRAM's own clock (the test adds it): the controller and the model on it.
        m.domains.sdram = ClockDomain(domain)
        m.submodules.model = DomainRenamer(domain)(model)
    elif shifted_clock:
        # As from a PLL's second output: the SDRAM on a clock of the same period, later
        # (the test adds it with its phase).
        m.domains.shifted = ClockDomain("shifted")
        m.d.comb += ResetSignal("shifted").eq(ResetSignal())
        m.submodules.model = DomainRenamer("shifted")(model)
    elif inverted_clock:
        # As on the board: the SDRAM clocked by the inverted clock (its falling edge).
        m.domains.sdram = ClockDomain("sdram", clk_edge="neg")
        m.d.comb += [ClockSignal("sdram").eq(ClockSignal()),
                     ResetSignal("sdram").eq(ResetSignal())]
        m.submodules.model = DomainRenamer("sdram")(model)
    else:
        m.submodules.model = model
    attach(m, model, ctrl.sdram)
    return m, ctrl, model


def _slot(seed, index):
    return random.Random(seed * 1_000_003 + index).getrandbits(128)


def run(slots, *, timing=TIMING, fifo_depth=16, every=1, read_back=True, seed=1,
        tail=0, inverted_clock=False, domain=None, sdram_period=None, sync_period=1e-8,
        sdram_phase=None):
    """Offer the slot writes ``slots`` (addresses) one each ``every`` clocks (waiting while
    ``w_ready`` is low unless ``every`` is 1, which drops refused slots and notes them),
    then read every word of the written slots back. Returns the evidence."""
    m, ctrl, model = _system(timing, fifo_depth, inverted_clock, domain,
                             shifted_clock=sdram_phase is not None)
    p = ctrl.mem
    out = {"written": {}, "refused": 0, "read": {}}

    async def bench(ctx):
        for address in slots:
            value = _slot(seed, address)
            ctx.set(p.w_addr, address)
            ctx.set(p.w_data, value)
            ctx.set(p.w_en, 1)
            while True:
                ready = ctx.get(p.w_ready)
                await ctx.tick()
                if ready:
                    out["written"][address] = value
                    break
                if every == 1:
                    out["refused"] += 1
                    break
            ctx.set(p.w_en, 0)
            for _ in range(every - 1):
                await ctx.tick()
        for _ in range(tail):
            await ctx.tick()
        if read_back:
            for address in out["written"]:
                words = []
                for lane in range(4):
                    ctx.set(p.r_addr, address << 2 | lane)
                    ctx.set(p.r_en, 1)
                    await ctx.tick()
                    ctx.set(p.r_en, 0)
                    clocks = 0
                    while not ctx.get(p.r_valid):
                        await ctx.tick()
                        clocks += 1
                        assert clocks < 20 * fifo_depth + 200, "no answer"
                    words.append(ctx.get(p.r_data))
                    await ctx.tick()
                out["read"][address] = sum(w << 32 * i for i, w in enumerate(words))
        out.update(flags=ctx.get(model.flags), refreshes=ctx.get(model.refreshes),
                   fills=ctx.get(ctrl.fills), ready=ctx.get(model.ready))
        out["storage"] = {i: ctx.get(model.storage.data[i]) for i in range(8)}

    sim = Simulator(m)
    sim.add_clock(sync_period)
    if domain:
        sim.add_clock(sdram_period, domain=domain)
    if sdram_phase is not None:
        sim.add_clock(sync_period, phase=sdram_phase * sync_period, domain="shifted")
    sim.add_testbench(bench)
    sim.run()
    return out


def test_slots_written_and_read_back_across_rows_and_banks():
    # 64 slots fill a row; these cross rows and banks, and come back out of order. The
    # reads start while the FIFO still holds slots (they wait for it to drain).
    slots = list(range(150)) + [4095, 3000, 64 * 4 + 1]
    out = run(slots, every=3, tail=50)
    assert out["flags"] == 0, violation_names(out["flags"])
    assert out["ready"] == 1
    assert out["read"] == out["written"] and len(out["written"]) == len(slots)
    # Slot 0 is the first 8 words of bank 0, row 0 (the backdoor).
    assert sum(w << 16 * i for i, w in enumerate(out["storage"].values())) == _slot(1, 0)


def test_read_delay_for_an_inverted_sdram_clock():
    # The board's SDRAM samples on the falling edge (its clock pin is the inverted
    # clock): with read_delay=-1 the slots come back whole.
    timing = replace(TIMING, read_delay=-1)
    out = run(list(range(70)), timing=timing, every=3, tail=20, inverted_clock=True)
    assert out["flags"] == 0, violation_names(out["flags"])
    assert out["read"] == out["written"] and len(out["written"]) == 70


@pytest.mark.parametrize("phase", [0.2, 0.6, 0.9])
def test_read_delay_for_a_phase_shifted_sdram_clock(phase):
    # The SDRAM on a PLL output of the controller's period, a fraction of it later: in the
    # simulator (no pads, no analogue delays) the data of each of its edges is sampled by
    # the controller's next edge, whatever the phase, so read_delay=-1 as for the
    # inverted clock.
    timing = replace(TIMING, read_delay=-1)
    out = run(list(range(70)), timing=timing, every=3, tail=20, sdram_phase=phase)
    assert out["flags"] == 0, violation_names(out["flags"])
    assert out["read"] == out["written"] and len(out["written"]) == 70


@pytest.mark.parametrize("period", [3e-9, 23e-9], ids=["faster", "slower"])
def test_sdram_in_a_clock_domain_of_its_own(period):
    # The controller and the SDRAM on their own clock, faster or slower than the port's:
    # slots cross the asynchronous FIFO, reads the handshake; reads still wait for the
    # slots written before them.
    slots = list(range(100)) + [4095, 64 * 4 + 1]
    out = run(slots, every=2, tail=10, domain="sdram", sdram_period=period)
    assert out["flags"] == 0, violation_names(out["flags"])
    assert out["ready"] == 1
    assert out["read"] == out["written"] and len(out["written"]) == len(slots)


@pytest.mark.parametrize("mhz", [SDRAM_CLOCK_MHZ, 125])
def test_sdram_at_the_board_clocks(mhz):
    # The passive ULX3S: the controller on its SDRAM clock (and on 125 MHz) with the data
    # sheet's timing there (CAS latency 3, tRCD 3 ...), its port on the 33 MHz PCI
    # clock. A slot offered every other PCI clock (267 MB/s) is more than the SDRAM
    # takes: the FIFO fills and the writer waits; every slot comes back.
    timing = replace(SDRAMTiming.for_clock(mhz, row_bits=4), power_up=200)
    slots = list(range(200)) + [4095, 64 * 4 + 1]
    out = run(slots, timing=timing, every=2, tail=10, domain="sdram",
              sdram_period=1e-6 / mhz, sync_period=30e-9)
    assert out["flags"] == 0, violation_names(out["flags"])
    assert out["ready"] == 1
    assert out["read"] == out["written"] and len(out["written"]) == len(slots)


def test_timing_at_the_board_clock_and_its_read_delay():
    timing = SDRAMTiming.for_clock(125)
    assert (timing.cas_latency, timing.t_rcd, timing.t_ras, timing.t_rp, timing.t_rc,
            timing.t_wr, timing.t_rfc, timing.power_up, timing.refresh_interval,
            timing.read_delay) == (3, 3, 6, 3, 9, 2, 9, 25000, 976, 0)
    timing = SDRAMTiming.for_clock(110)
    assert (timing.cas_latency, timing.t_rcd, timing.t_ras, timing.t_rp, timing.t_rc,
            timing.t_wr, timing.t_rfc, timing.power_up, timing.refresh_interval,
            timing.read_delay) == (3, 3, 5, 3, 8, 2, 8, 22000, 859, 0)
    # Registered pads, inverted SDRAM clock (docs/sdram.md): at 125 MHz word 0 is valid
    # at the pins from 4.93 to 5.09 clocks after the READ leaves the controller for a
    # 2..6 ns round trip; the input flip-flop samples it at edge 5, the controller at 6.
    assert SDRAMTiming.for_clock(125, board=True).read_delay == 2
    assert SDRAMTiming.for_clock(110, board=True).read_delay == 2
    assert SDRAMTiming.for_clock(33, board=True).read_delay == 1
    assert board_read_delay(125, 3, round_trip_ns=(3.0, 5.0)) == 2
    # With no delay on the way back word 0 would be gone before edge 5.
    with pytest.raises(ValueError, match="at 125 MHz no clock edge"):
        board_read_delay(125, 3, round_trip_ns=(0.0, 0.0))
    # A 100 MHz window (CAS latency 2) holds no edge for the whole 2..6 ns.
    with pytest.raises(ValueError, match="at 100 MHz no clock edge"):
        board_read_delay(100, 2)
    with pytest.raises(ValueError, match="up to 133 MHz, not 150"):
        SDRAMTiming.for_clock(150)


def test_read_timing_with_the_sdram_clock_shifted_in_phase():
    # docs/sdram.md, "Pins and read timing". At 110 MHz (T = 9.09 ns, CAS latency 3) the
    # inverted clock (half a period) leaves the read data 0.15 ns on the near side of
    # edge 5; the commands 3.05 ns (hold: 4.55 less 0.8 and setup: 4.55 less 1.5, the
    # smaller).
    read_delay, read, command = board_margins(110, 3)
    assert (read_delay, round(read, 2), round(command, 2)) == (2, 0.15, 3.05)
    # The best phase centres word 0's window (T - 6.7 ns = 2.39 ns long) on edge 5:
    # 221 degrees (442/720 of a period); the PLL's nearest step, 34/56 (218.6 degrees),
    # leaves 1.13 ns each side at most, and 2.77 ns to the commands' hold.
    assert board_clock_phase(110) == 442 / 720
    read_delay, read, command = board_margins(110, 3, clock_phase=34 / 56)
    assert (read_delay, round(read, 2), round(command, 2)) == (2, 1.13, 2.77)
    assert SDRAMTiming.for_clock(110, board=True, clock_phase=34 / 56).read_delay == 2
    # 100 and 50 MHz (CAS latency 2): no edge on the inverted clock; shifted, 1.28 and
    # 3.19 ns of margin.
    assert board_clock_phase(100) == 479 / 720
    assert board_margins(100, 2, clock_phase=43 / 64)[:2] == (2, 1.28125)
    assert board_margins(50, 2, clock_phase=30 / 128)[0] == 1
    assert round(min(board_margins(50, 2, clock_phase=30 / 128)[1:]), 2) == 3.19
    assert SDRAMTiming.for_clock(100, board=True, clock_phase=43 / 64).read_delay == 2
    with pytest.raises(ValueError, match="at 50 MHz no clock edge"):
        SDRAMTiming.for_clock(50, board=True)
    # A phase that suits the read data but comes too soon after the command.
    with pytest.raises(ValueError, match="at 50 MHz an SDRAM clock 25.9 degrees late misses "
                                         r"the commands' setup \(1.5 ns\) or hold"):
        board_read_delay(50, 2, clock_phase=0.072)


def test_refresh_on_time_under_continuous_writes():
    # A slot offered each 8 clocks keeps the data pins busy (a burst of 8 words per slot);
    # the deadline is 200 clocks; the FIFO absorbs the row changes and refreshes.
    out = run(range(400), every=8, read_back=False, fifo_depth=64)
    assert out["flags"] == 0, violation_names(out["flags"])
    clocks = 400 * 8
    assert out["refreshes"] >= clocks // TIMING.refresh_interval
    assert out["fills"] == 0


def test_fifo_fills_and_what_it_took_is_kept():
    # A slot every clock is eight times what the SDRAM takes: the FIFO fills, refuses,
    # counts; every slot it took is in the SDRAM.
    out = run(range(300), every=1, fifo_depth=8, tail=100)
    assert out["flags"] == 0, violation_names(out["flags"])
    assert out["refused"] > 0 and out["fills"] >= 1
    assert out["read"] == out["written"]
    assert len(out["written"]) + out["refused"] == 300


def test_parameters_checked():
    with warnings.catch_warnings():
        # The refused objects are never elaborated; collect them inside this block.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError):
            SDRAMTraceMemory(TIMING, addr_bits=TIMING.slot_bits + 1)
        with pytest.raises(ValueError):
            SDRAMTraceMemory(SDRAMTiming(cas_latency=4))
        with pytest.raises(ValueError):
            SDRAMTraceMemory(SDRAMTiming(refresh_interval=20))
        with pytest.raises(ValueError, match="tRFC must be 2 clocks or more, not 1"):
            SDRAMTraceMemory(SDRAMTiming(t_rfc=1))
        with pytest.raises(ValueError, match="holds a power of two slots, not 100"):
            SDRAMTraceMemory(TIMING, fifo_depth=100, domain="sdram")
        gc.collect()
    timing = SDRAMTiming.for_clock(100)
    assert (timing.t_rcd, timing.t_rc, timing.refresh_interval, timing.cas_latency) == \
        (2, 7, 781, 2)
    assert timing.slot_bits == 21           # 32 MB of 16-byte slots
