# SPDX-License-Identifier: BSD-2-Clause
"""Bus waveforms for the spy tests, written from the PCI rules (PCI LB 3.0 §3.3), and a
runner that feeds them to a component under Amaranth's Python simulator.

A waveform is a list of clocks; each clock is a dict of BusState lines (inside-level,
active-high controls, C/BE# and AD as on the pins). :func:`transaction` builds the clocks of
one transaction, ending on its last busy clock; :func:`idle` adds idle clocks. PAR is filled
in by :func:`finish` (even parity over the previous clock's AD and C/BE#), as a real bus has.
"""

import pytest

from amaranth.sim import Simulator

from pcispy.pci.bus import Command, parity, bus_lines

__all__ = ["idle", "transaction", "finish", "run_wave", "IDLE"]

IDLE = {"frame": 0, "irdy": 0, "trdy": 0, "stop": 0, "devsel": 0, "ad": 0, "cbe": 0xF}


def idle(count=1, **lines):
    return [dict(IDLE, **lines) for _ in range(count)]


def transaction(command, address, data=(1,), *, be=0x0, devsel=2, latency=None,
                target_waits=None, initiator_waits=None, ending="completion", stop_phase=None,
                dac=False, req64=False, ack64=False, gnt=None, parity_error_at=None,
                drop_frame_at=None):
    """The clocks of one transaction, from the address phase to its last busy clock.

    ``data``: the words of the data phases the initiator wants; ``devsel``: clocks after the
    last address phase that DEVSEL# comes (1 fast .. 4 subtractive); ``latency``: the clock
    (address phase = 0) at which TRDY# (or STOP#) first comes, default as early as the rules
    allow; ``target_waits[i]``/``initiator_waits[i]``: wait clocks before data phase ``i``
    (i >= 1 for the target; the initiator's also for phase 0); ``ending``: "completion",
    "retry", "disconnect_data", "disconnect_nodata", "target_abort" or "master_abort";
    ``stop_phase``: the data phase at which the target stops (disconnects); ``gnt``: value
    of GNT# on every clock (for latency-timer cases); ``drop_frame_at``: the initiator ends
    early (latency timer) at the phase index given.
    """
    command = Command(command)
    reads = command.is_read
    clocks = []
    extra = {}
    if gnt is not None:
        extra["gnt"] = gnt
    if req64:
        extra["req64"] = 1
    first = {"frame": 1, "irdy": 0, "trdy": 0, "stop": 0, "devsel": 0,
             "ad": address & 0xFFFF_FFFF, "cbe": Command.DUAL_ADDRESS.value if dac else command.value}
    clocks.append(dict(first, **extra))
    if dac:
        clocks.append(dict(first, ad=address >> 32, cbe=command.value, **extra))
    last_address = len(clocks) - 1
    devsel_at = last_address + devsel
    # Reads need a turnaround clock before the target drives AD.
    earliest = last_address + (2 if reads else 1)
    first_ready = max(devsel_at, earliest) if latency is None else latency
    assert first_ready >= max(devsel_at, earliest), "TRDY# before DEVSEL#/turnaround"
    target_waits = dict(enumerate(target_waits or []))
    initiator_waits = dict(enumerate(initiator_waits or []))
    words = list(data)
    last_phase = len(words) - 1 if drop_frame_at is None else drop_frame_at
    phase = 0
    t = last_address + 1
    target_ready_at = first_ready
    initiator_ready_at = t + initiator_waits.get(0, 0)
    stopping = False      # the target has asserted STOP# (held until FRAME# is seen high)
    frame = 1
    abort = ending == "target_abort"
    while True:
        irdy = int(t >= initiator_ready_at)
        if frame and irdy and phase >= last_phase:
            frame = 0  # last data phase: FRAME# goes with IRDY# asserted
        line = dict(IDLE, frame=frame, irdy=irdy, cbe=be, **extra)
        if ending == "master_abort":
            # No DEVSEL#: the initiator gives up after the subtractive window (clock 5).
            line["ad"] = words[0] if not reads else 0
            if t >= last_address + 5:
                line.update(frame=0, irdy=1)
                clocks.append(line)
                break
            clocks.append(line)
            t += 1
            continue
        devsel_now = int(t >= devsel_at)
        line["devsel"] = devsel_now
        target_ready = t >= target_ready_at
        stop_here = False
        if abort and target_ready:
            line.update(devsel=0, stop=1)
            stop_here = True
        elif stopping:
            line["stop"] = 1
        elif target_ready:
            if ending == "retry" and phase == 0:
                line["stop"] = 1
                stop_here = True
            elif ending == "disconnect_nodata" and phase == stop_phase:
                line["stop"] = 1
                stop_here = True
            elif ending == "disconnect_data" and phase == stop_phase:
                line.update(trdy=1, stop=1)
                stop_here = True
            else:
                line["trdy"] = 1
        if stopping and abort:
            line["devsel"] = 0
        word = words[min(phase, len(words) - 1)]
        line["ad"] = word if (not reads or line["trdy"]) else 0
        clocks.append(line)
        if stop_here:
            stopping = True
        if line["trdy"] and irdy:
            # the data phase completes
            phase += 1
            if not frame:
                break
            target_ready_at = t + 1 + target_waits.get(phase, 0)
            initiator_ready_at = t + 1 + initiator_waits.get(phase, 0)
        elif stopping and irdy and not frame:
            break
        if stopping:
            # The initiator ends as soon as it sees STOP#: FRAME# goes, IRDY# stays for one.
            frame = 0
            initiator_ready_at = min(initiator_ready_at, t + 1)
        t += 1
    if parity_error_at is not None:
        clocks[parity_error_at]["perr"] = 1
    return clocks


def finish(clocks, width=32):
    """Fill PAR (and PAR64): even parity of the previous clock's AD and C/BE#."""
    out = []
    prev = IDLE
    # Every line has a value on every clock: undriven controls read deasserted (pull-ups).
    quiet = {name: 0 for name in bus_lines(width) if name not in ("par", "par64")}
    quiet.update(IDLE)
    if width == 64:
        quiet["cbe_hi"] = 0xF
    for clock in clocks:
        line = dict(quiet, **clock)
        line.setdefault("par", parity(prev.get("ad", 0), prev.get("cbe", 0xF)))
        if width == 64:
            line.setdefault("ad_hi", 0)
            line.setdefault("cbe_hi", 0xF)
            line.setdefault("par64", parity(prev.get("ad_hi", 0), prev.get("cbe_hi", 0xF)))
        out.append(line)
        prev = line
    return out


def run_wave(dut, clocks, bus, *, before=None, on_clock=None, width=32, extra_clocks=4,
             vcd=None):
    """Feed ``clocks`` (plus ``extra_clocks`` idle ones) to ``bus`` of ``dut``, one per
    clock; ``on_clock(ctx, index)`` is called after setting each clock's inputs (read
    outputs there with ``ctx.get``); ``before(ctx)`` runs first."""
    clocks = finish(list(clocks) + idle(extra_clocks), width)
    timestamp = getattr(dut, "timestamp", None)

    async def bench(ctx):
        if before is not None:
            await before(ctx)
        for index, clock in enumerate(clocks):
            for name, value in clock.items():
                ctx.set(getattr(bus, name), value)
            if on_clock is not None:
                await on_clock(ctx, index)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    if timestamp is not None:
        async def count(ctx):
            value = 0
            while True:
                ctx.set(timestamp, value)
                await ctx.tick()
                value += 1
        sim.add_process(count)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    return clocks


@pytest.mark.spy
def test_wave_parity_is_even():
    clocks = finish(transaction(Command.MEM_WRITE, 0x1000, [0xDEADBEEF, 3]) + idle(2))
    for prev, cur in zip(clocks, clocks[1:]):
        assert (bin(prev["ad"]).count("1") + bin(prev["cbe"]).count("1") + cur["par"]) % 2 == 0


@pytest.mark.spy
def test_wave_retry_shape():
    # Address, then STOP# with DEVSEL# at medium speed (clock 2), then FRAME# released.
    clocks = transaction(Command.IO_WRITE, 0x70, [0x55], ending="retry", devsel=2)
    assert [(c["frame"], c["irdy"], c["trdy"], c["stop"], c["devsel"]) for c in clocks] == [
        (1, 0, 0, 0, 0), (0, 1, 0, 0, 0), (0, 1, 0, 1, 1)]
