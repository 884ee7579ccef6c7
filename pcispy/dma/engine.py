# SPDX-License-Identifier: BSD-2-Clause
"""The DMA exerciser: programmable bus-master traffic and its measurements.

The engine is programmed through its ``dma`` register block (pcispy/dma/registers.py):
command, 64-bit start address, bytes per pass, burst length (data phases per transaction,
or unlimited), idle clocks between bursts, 32/64-bit, data pattern, read verification,
passes or continuous mode. ``control.start`` checks the settings; an impossible combination
sets the matching ``status.err_*`` bits and the engine does not start.

A pass walks the buffer in bursts: each burst is one :class:`~.initiator.Descriptor` for
the :class:`~pcispy.core.initiator.Initiator`, which turns it into bus
transactions (repeating retries, continuing after disconnects). The next descriptor is
offered while the current one runs, so with ``idle.clocks = 0`` bursts follow each other
with only the idle clock the protocol requires. Write data comes from a
:class:`~.patterns.PatternGenerator`; read data is compared with a second one.

Results are counted from the initiator's events: clocks from start to done, clocks owning
the bus, data phases, bytes, transactions, every termination, GNT# wait and first-data
latency (min/max/sum), mismatches.

Timing: the initiator's events arrive registered, a clock after the edge they describe (the
live handshake lines end at its flip-flops). The engine keeps the original clock counts: it
counts clocks as the run would have seen them, the idle gap after a burst is counted from
the burst's end, and the first burst of the next pass is offered in the clock after the
pass's last burst ends, before its (registered) end reaches the pass bookkeeping. The burst
offered is registered a clock ahead (its length beside the DWORDs left; the settings are
frozen while the engine runs): the initiator decides its start in the clock it reads the
offer, and no comparison of the engine's lies in front of that decision.
"""

from types import SimpleNamespace

from amaranth import Module, Signal, Mux, Cat
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.csr.bank import BlockSignature
from pcispy.dma.registers import DMA
from pcispy.pci.bus import ADDecision, Command, Termination, PCIBusSignature
from pcispy.core.initiator import (Initiator, Handshake, InitiatorStatus, DescriptorResult,
                             is_memory_command)
from pcispy.dma.patterns import Pattern, PatternGenerator

__all__ = ["DMAEngine", "SETTINGS_REGISTERS"]

#: Registers that cannot change while the engine runs (writes refused, status.err_busy).
SETTINGS_REGISTERS = ("mode", "addr_lo", "addr_hi", "length", "burst", "idle", "seed",
                      "passes", "wait")

#: 64-bit results readable atomically: reading ``<name>_lo`` latches ``<name>_hi``.
_WIDE_RESULTS = ("clocks", "bus_clocks", "bytes", "gnt_wait_sum", "latency_sum")
#: Result counters, each the register (pair) of its name.
_COUNTERS = ("clocks", "bus_clocks", "bytes", "gnt_wait_sum", "latency_sum", "data_phases",
             "transactions", "retries", "disconnects_data", "disconnects_nodata",
             "master_aborts", "target_aborts", "latency_timer_ends", "latency_count")
#: Counters of the transactions ended by each termination.
_ENDED_BY = {
    "retries": Termination.RETRY,
    "disconnects_data": Termination.DISCONNECT_DATA,
    "disconnects_nodata": Termination.DISCONNECT_NODATA,
    "master_aborts": Termination.MASTER_ABORT,
    "target_aborts": Termination.TARGET_ABORT,
    "latency_timer_ends": Termination.LATENCY_TIMER,
}
_NONE = 0xFFFF_FFFF     # a minimum or index before its first sample


def _illegal(port):
    """1 when the settings register behind ``port`` holds a value its declaration
    (pcispy/dma/registers.py) does not allow: a field outside its
    :class:`~pcispy.csr.map.Legal` values, unless the field's ``unlimited`` flag is set."""
    refusals = []
    for field in port.signature.register.fields:
        if field.legal is not None:
            outside = field.legal.excludes(getattr(port, field.name))
            if field.legal.unlimited:
                outside &= ~getattr(port, field.legal.unlimited)
            refusals.append(outside)
    return Cat(*refusals).any()


class DMAEngine(wiring.Component):
    """DMA exerciser with its bus master, in clock domain ``pci``.

    Ports:
        regs (In, BlockSignature(DMA)): the ``dma`` block of the CSR bank
            (``wiring.connect(m, bank.dma, engine.regs)``).
        bus (Out, PCIBusSignature(width)): to the pads, shared with the target (each
            drives only while it owns the bus).
        now (In, Handshake): the pads' unregistered handshake lines (``live``) and ACK64#.
        gnt_allowed (In, 1, init 1): GNT# counts only while this is 1 (registered; passive
            mode withholds GNT# with it).
        drive_allowed (In, 1, init 1): the master's C/BE# enable only while this is 1
            (registered; passive mode's permission, which the pads leave to the master for
            C/BE#: :data:`~pcispy.core.pads.CORE_GATED_LINES`).
        par_error (In, 1), par64_error (In, 1): the pads' live parity check.
        bus_master (In, 1): configuration Command bit 2 (Bus Master enable).
        mwi_enable (In, 1): configuration Command bit 4.
        parity_response (In, 1): configuration Command bit 6.
        latency_timer (In, 8): configuration Latency Timer, in clocks.
        cache_line (In, 8): configuration Cache Line Size, in DWORDs.
        status (Out, InitiatorStatus): pulses for the configuration Status register.
        ad_decision (Out, ADDecision): 32-bit only: the master's ``bus.ad`` as a decision
            between two registered words (:class:`~..pci.initiator.Initiator`), for the
            pads.

    Parameters:
        width: bus width, 32 or 64.
        ad_groups: the copies of ``ad_decision``'s ``take_high`` (the initiator's).
    """
    def __init__(self, width=32, *, ad_groups=1):
        self.width = width
        self.ad_groups = ad_groups
        super().__init__({
            "regs": In(BlockSignature(DMA)),
            "bus": Out(PCIBusSignature(width)),
            "now": In(Handshake),
            "gnt_allowed": In(1, init=1),
            "drive_allowed": In(1, init=1),
            "par_error": In(1),
            "par64_error": In(1),
            "bus_master": In(1),
            "mwi_enable": In(1),
            "parity_response": In(1),
            "latency_timer": In(8),
            "cache_line": In(8),
            "status": Out(InitiatorStatus),
            **({} if width == 64 else {"ad_decision": Out(ADDecision(ad_groups))}),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.initiator = ini = Initiator(self.width, ad_groups=self.ad_groups)
        m.submodules.writer = writer = PatternGenerator()
        m.submodules.checker = checker = PatternGenerator()
        self._connect_master(m, ini)
        settings = self._settings(m)
        # The run's state, shared by the parts below (which add their own results to it).
        running = Signal()
        stop_pending = Signal()
        finish = Signal()       # the run ends now: last pass done, stopped or aborted
        launch = self._start(m, settings, running)
        run = SimpleNamespace(running=running, stop_pending=stop_pending, finish=finish,
                              launch=launch)
        self._walk(m, ini, settings, run)
        self._run_control(m, ini, run)
        self._data(m, ini, writer, checker, settings, run)
        self._results(m, ini.events, run)
        return m

    def _connect_master(self, m, ini):
        """The bus master :class:`~pcispy.core.initiator.Initiator` on the engine's ports."""
        wiring.connect(m, wiring.flipped(self.bus), ini.bus)
        m.d.comb += [
            ini.now.eq(self.now), ini.gnt_allowed.eq(self.gnt_allowed),
            ini.drive_allowed.eq(self.drive_allowed),
            ini.par_error.eq(self.par_error), ini.par64_error.eq(self.par64_error),
            ini.latency_timer.eq(self.latency_timer), ini.cache_line.eq(self.cache_line),
            ini.parity_response.eq(self.parity_response),
            ini.irdy_wait.eq(self.regs.wait.irdy),
            self.status.eq(ini.status),
        ]
        if self.width == 32:
            m.d.comb += self.ad_decision.eq(ini.ad_decision)

    def _settings(self, m):
        """The settings registers as the engine reads them: the typed command and pattern,
        the 64-bit start address, bytes per pass, bytes per data phase, DWORDs per burst."""
        regs = self.regs
        cmd = Signal(Command)
        pattern = Signal(Pattern)
        burst_dwords = Signal(14)
        m.d.comb += [
            cmd.eq(regs.mode.cmd),
            pattern.eq(regs.mode.pattern),
            burst_dwords.eq(Mux(regs.mode.width64, regs.burst.phases << 1,
                                regs.burst.phases)),
        ]
        return SimpleNamespace(
            mode=regs.mode, cmd=cmd, pattern=pattern, is_write=cmd.as_value()[0],
            start_addr=Cat(regs.addr_lo.addr_lo, regs.addr_hi.addr_hi),
            length=regs.length.length, width_bytes=Mux(regs.mode.width64, 8, 4),
            burst_dwords=burst_dwords)

    def _refusals(self, m, s):
        """Every reason ``control.start`` refuses the settings ``s``, by its status bit."""
        regs = self.regs
        line = self.cache_line
        line_ok = (line != 0) & ((line & (line - 1)) == 0)
        line_bytes_mask = Signal(10)
        m.d.comb += line_bytes_mask.eq((line << 2) - 1)
        mwi = s.cmd == Command.MEM_WRITE_INVALIDATE
        return {
            "err_burst": _illegal(regs.burst),
            "err_length": _illegal(regs.length) | ((s.length & (s.width_bytes - 1)) != 0),
            "err_width": s.mode.width64 & ((self.width != 64) | ~is_memory_command(s.cmd)),
            "err_align": (s.start_addr[:3] & (s.width_bytes - 1)) != 0,
            "err_cmd": s.cmd.as_value().matches(
                Command.RESERVED_4, Command.RESERVED_5, Command.RESERVED_8,
                Command.RESERVED_9, Command.DUAL_ADDRESS, Command.SPECIAL_CYCLE),
            "err_mwi_line": mwi & (~self.mwi_enable | ~line_ok),
            "err_mwi_align": mwi & line_ok & (((s.start_addr[:10] | s.length[:10]) &
                                                line_bytes_mask) != 0),
            "err_addr": ~is_memory_command(s.cmd) & (regs.addr_hi.addr_hi != 0),
            "err_seed": (s.pattern == Pattern.LFSR) & (regs.seed.seed == 0),
            "err_verify": s.mode.verify & (s.is_write | (s.pattern == Pattern.TIMESTAMP)),
            "err_master": ~self.bus_master,
        }

    def _start(self, m, s, running):
        """``control.start``: check the settings ``s`` (the refusals stay in
        ``status.err_*`` until the next start) and return the launch pulse; refuse settings
        writes and starts while ``running`` (``status.err_busy``)."""
        regs = self.regs
        m.d.comb += regs.status.busy.eq(running)
        # Settings stay fixed while running, and from the clock the run is launched: a
        # write arriving with the start pulse (a burst write to control, then mode ...)
        # would otherwise change a checked setting under the starting run.
        frozen = Signal()
        refused_write = Signal()
        for name in SETTINGS_REGISTERS:
            reg = getattr(regs, name)
            m.d.comb += reg.refuse.eq(frozen & reg.w_stb)
            with m.If(frozen & reg.w_stb):
                m.d.comb += refused_write.eq(1)

        checks = self._refusals(m, s)
        errors = {name: Signal(name=name) for name in checks}
        err_busy = Signal()
        m.d.comb += regs.status.err_busy.eq(err_busy)
        for name, sig in errors.items():
            m.d.comb += getattr(regs.status, name).eq(sig)
        any_error = Signal()
        m.d.comb += any_error.eq(Cat(*checks.values()).any())
        start = regs.control.start & ~running
        launch = Signal()
        m.d.comb += launch.eq(start & ~any_error)
        m.d.comb += frozen.eq(running | launch)
        with m.If(start):
            m.d.pci += [sig.eq(checks[name]) for name, sig in errors.items()]
            m.d.pci += err_busy.eq(0)
        with m.If((regs.control.start & running) | refused_write):
            m.d.pci += err_busy.eq(1)
        return launch

    def _walk(self, m, ini, s, run):
        """The passes over the buffer, in bursts: each burst is one descriptor offered to
        the master ``ini``; idle clocks between bursts; the passes counted. Sets
        ``run.pass_end`` (a pass's last burst ended, seen a clock late),
        ``run.another_pass`` and drives ``run.finish`` after the last pass."""
        regs, mode, length = self.regs, s.mode, s.length
        ev = ini.events
        next_addr = Signal(64)
        left = Signal(31)            # DWORDs of this pass not yet handed to the initiator
        passes_left = Signal(16)
        last_issued = Signal()       # the pass's final descriptor is with the initiator
        idle_left = Signal(16)
        pass_end = Signal()

        # A pass continues after its last burst: the next pass starts from the beginning.
        another_pass = mode.continuous | (passes_left > 1)
        # The last burst of the pass has ended (the initiator is idle again) and the next
        # pass starts at once: its first burst is offered now, while that end is still on
        # its way through the registered events (it reloads the pass below, next clock).
        fresh = Signal()
        # With idle clocks between bursts, no burst is offered while one runs (its end is
        # known a clock late, and the gap counts from it).
        gap_armed = Signal()
        m.d.comb += fresh.eq(last_issued & another_pass & ~ini.busy & ~gap_armed)
        # The burst offered is computed a clock ahead, so that the initiator's start (which
        # reads the offer in the clock it starts) waits for no comparison here: the
        # burst of ``left`` is kept beside it, written with it, and the fresh pass's first
        # burst follows from the settings, which are frozen while the engine runs.
        def burst_of(dwords, fits_q, chunk_q):
            """Statements that register whether ``dwords`` go in one burst (``fits_q``) and
            the burst (``chunk_q``: all of them, or the burst length)."""
            fits = regs.burst.unlimited | (dwords <= s.burst_dwords)
            return [fits_q.eq(fits), chunk_q.eq(Mux(fits, dwords, s.burst_dwords))]

        left_fits = Signal()            # of ``left``
        left_chunk = Signal(31)
        fresh_fits = Signal()           # of a whole pass (``length``)
        fresh_chunk = Signal(31)
        m.d.pci += burst_of(length[2:], fresh_fits, fresh_chunk)

        def keep_left(dwords):
            """Statements that set ``left`` (and its burst) to ``dwords``."""
            return [left.eq(dwords), *burst_of(dwords, left_fits, left_chunk)]

        offer_addr = Signal(64)
        offer_left = Signal(31)
        offer_fits = Signal()
        m.d.comb += [
            offer_addr.eq(Mux(fresh, s.start_addr, next_addr)),
            offer_left.eq(Mux(fresh, length[2:], left)),
            offer_fits.eq(Mux(fresh, fresh_fits, left_fits)),
        ]
        chunk = Signal(31)
        m.d.comb += chunk.eq(Mux(fresh, fresh_chunk, left_chunk))
        # Passes after the offered burst's (passes_left is at least 1; a fresh pass, not
        # yet counted, is one of them).
        more_passes = Mux(fresh & ~mode.continuous, passes_left > 2, passes_left > 1)
        more = ~offer_fits | mode.continuous | more_passes
        m.d.comb += [
            ini.desc.valid.eq(run.running & (~last_issued | fresh) & ~run.stop_pending &
                              (idle_left == 0) & ~gap_armed & ~regs.control.stop),
            ini.desc.payload.cmd.eq(s.cmd),
            ini.desc.payload.addr.eq(offer_addr),
            ini.desc.payload.dwords.eq(chunk),
            ini.desc.payload.wide.eq(mode.width64),
            ini.desc.payload.more.eq(more & (regs.idle.clocks == 0)),
            ini.stop.eq(regs.control.stop & run.running),
        ]
        # The offer with the master free (``busy`` 0: a fresh pass then waits only for the
        # pass's end and another pass to come), for its start decision: from registers, not
        # behind the master's busy. Every burst offered moves something (the length and
        # the burst are checked at the start).
        m.d.comb += ini.offer_when_free.eq(
            run.running & (~last_issued | another_pass) & ~run.stop_pending &
            (idle_left == 0) & ~gap_armed & ~regs.control.stop)
        issued = ini.desc.valid & ini.desc.ready

        with m.If(idle_left != 0):
            m.d.pci += idle_left.eq(idle_left - 1)
        ok_done = ev.done & (ev.result == DescriptorResult.OK)
        with m.If(ok_done):
            # The gap counts from the burst's end, a clock before this event.
            m.d.pci += idle_left.eq(Mux(regs.idle.clocks == 0, 0, regs.idle.clocks - 1))
        with m.If(ev.done):
            m.d.pci += gap_armed.eq(0)
        with m.If(issued & (regs.idle.clocks != 0)):
            m.d.pci += gap_armed.eq(1)

        passes_done = Signal(32)
        m.d.comb += regs.passes_done.passes_done.eq(passes_done)
        m.d.comb += pass_end.eq(ok_done & last_issued)
        with m.If(pass_end):
            m.d.pci += passes_done.eq(passes_done + 1)
            with m.If(another_pass):
                m.d.pci += [
                    next_addr.eq(s.start_addr), *keep_left(length[2:]), last_issued.eq(0),
                    passes_left.eq(passes_left - ~mode.continuous),
                ]
            with m.Else():
                m.d.comb += run.finish.eq(1)
        # A burst issued now (after a pass's reload above: the fresh pass's first burst).
        with m.If(issued):
            m.d.pci += [next_addr.eq(offer_addr + (chunk << 2)), last_issued.eq(offer_fits),
                        *keep_left(offer_left - chunk)]
        with m.If(run.launch):
            m.d.pci += [
                last_issued.eq(0), idle_left.eq(0),
                next_addr.eq(s.start_addr), *keep_left(length[2:]),
                passes_left.eq(Mux(regs.passes.count == 0, 1, regs.passes.count)),
                passes_done.eq(0),
            ]
        run.pass_end, run.another_pass = pass_end, another_pass

    def _run_control(self, m, ini, run):
        """The run from launch to done: ``control.stop`` ends it once the master is idle, an
        abort ends it at once, ``run.finish`` after the last pass. Sets the outcome bits of
        ``status`` and ``run.counting``: the clocks the run counts."""
        regs, ev, running, stop_pending = self.regs, ini.events, run.running, run.stop_pending
        with m.If(regs.control.stop & running):
            m.d.pci += stop_pending.eq(1)
        stopped_now = stop_pending & ~ini.busy
        aborted = ev.done & ev.result.as_value().matches(DescriptorResult.MASTER_ABORT,
                                                         DescriptorResult.TARGET_ABORT)
        with m.If(aborted | stopped_now):
            m.d.comb += run.finish.eq(1)
        # The clocks the run would have counted with its end seen at once: not the clock
        # in which a burst's (registered) end finishes it.
        counting = Signal()
        m.d.pci += counting.eq(running & ~((run.pass_end & ~run.another_pass) | aborted))
        m.d.comb += [
            regs.status.done_set.eq(run.finish),
            regs.status.stopped_set.eq(stopped_now & ~aborted),
            regs.status.master_abort_set.eq(ev.done &
                                            (ev.result == DescriptorResult.MASTER_ABORT)),
            regs.status.target_abort_set.eq(ev.done &
                                            (ev.result == DescriptorResult.TARGET_ABORT)),
        ]
        with m.If(run.finish):
            m.d.pci += [running.eq(0), stop_pending.eq(0)]
        with m.If(run.launch):
            m.d.pci += [running.eq(1), stop_pending.eq(0)]
        run.counting = counting

    def _data(self, m, ini, writer, checker, s, run):
        """The data: ``writer`` gives the master the write pattern, ``checker`` follows the
        read data with the same pattern and counts the mismatching DWORDs."""
        regs = self.regs
        timestamp = Signal(32)
        m.d.pci += timestamp.eq(timestamp + 1)
        # Read words arrive a clock after their data phase: the checker restarts a clock
        # after the launch, and with the pass end (which comes a clock late itself).
        checker_restart = Signal()
        m.d.pci += checker_restart.eq(run.launch)
        for gen in (writer, checker):
            m.d.comb += [gen.pattern.eq(s.pattern), gen.seed.eq(regs.seed.seed),
                         gen.timestamp.eq(timestamp)]
        m.d.comb += [
            writer.restart.eq(run.launch | run.pass_end),
            writer.take.eq(ini.wdata_take),
            ini.wdata.eq(writer.window),
            checker.restart.eq(checker_restart | run.pass_end),
            checker.take.eq(ini.rdata.count),
        ]
        rd = ini.rdata
        bad0 = Signal()
        bad1 = Signal()
        m.d.comb += [
            bad0.eq(s.mode.verify & (rd.count != 0) & (rd.dw[0] != checker.window[0])),
            bad1.eq(s.mode.verify & (rd.count == 2) & (rd.dw[1] != checker.window[1])),
        ]
        rx_index = Signal(32)         # DWORDs received in this pass
        mismatches = Signal(32)
        first_mismatch = Signal(32, init=_NONE)
        m.d.comb += [regs.mismatches.mismatches.eq(mismatches),
                     regs.first_mismatch.first_mismatch.eq(first_mismatch)]
        with m.If(checker_restart):
            m.d.pci += rx_index.eq(0)
        with m.Else():
            m.d.pci += rx_index.eq(rx_index + rd.count)
        m.d.pci += mismatches.eq(mismatches + bad0 + bad1)
        with m.If((bad0 | bad1) & (first_mismatch == _NONE)):
            m.d.pci += first_mismatch.eq(rx_index + ~bad0)
        with m.If(run.launch):
            m.d.pci += [mismatches.eq(0), first_mismatch.eq(_NONE)]

    def _results(self, m, ev, run):
        """The result counters, from the master's events ``ev``: zeroed at launch; clocks
        while ``run.counting``; GNT# wait and first-data latency also as min/max."""
        regs = self.regs
        counters = {name: Signal(64 if name in _WIDE_RESULTS else 32, name=f"r_{name}")
                    for name in _COUNTERS}
        increments = {
            "clocks": run.counting,
            "bus_clocks": run.counting & ev.owning,
            "bytes": Mux(ev.phase, ev.dwords << 2, 0),
            "gnt_wait_sum": Mux(ev.start, ev.gnt_wait, 0),
            "latency_sum": Mux(ev.first & ev.phase, ev.latency, 0),
            "data_phases": ev.phase,
            "transactions": ev.start,
            "latency_count": ev.first & ev.phase,
        }
        for name, term in _ENDED_BY.items():
            increments[name] = ev.end & (ev.term == term)
        gnt_min = Signal(32, init=_NONE)
        gnt_max = Signal(32)
        lat_min = Signal(32, init=_NONE)
        lat_max = Signal(32)
        with m.If(ev.start):
            with m.If(ev.gnt_wait < gnt_min):
                m.d.pci += gnt_min.eq(ev.gnt_wait)
            with m.If(ev.gnt_wait > gnt_max):
                m.d.pci += gnt_max.eq(ev.gnt_wait)
        with m.If(ev.first & ev.phase):
            with m.If(ev.latency < lat_min):
                m.d.pci += lat_min.eq(ev.latency)
            with m.If(ev.latency > lat_max):
                m.d.pci += lat_max.eq(ev.latency)
        for name, counter in counters.items():
            m.d.pci += counter.eq(counter + increments[name])
        with m.If(run.launch):
            m.d.pci += [counter.eq(0) for counter in counters.values()]
            m.d.pci += [gnt_min.eq(_NONE), gnt_max.eq(0), lat_min.eq(_NONE), lat_max.eq(0)]
        m.d.comb += [
            regs.gnt_wait_min.gnt_wait_min.eq(gnt_min),
            regs.gnt_wait_max.gnt_wait_max.eq(gnt_max),
            regs.latency_min.latency_min.eq(lat_min),
            regs.latency_max.latency_max.eq(lat_max),
        ]
        self._show_counters(m, counters)

    def _show_counters(self, m, counters):
        """The ``counters`` in their registers; a 64-bit one's high word latched when its
        low word is read."""
        regs = self.regs
        for name, counter in counters.items():
            if name in _WIDE_RESULTS:
                lo = getattr(regs, f"{name}_lo")
                hi = getattr(regs, f"{name}_hi")
                latched = Signal(32, name=f"{name}_hi_latched")
                with m.If(lo.r_stb):
                    m.d.pci += latched.eq(counter[32:])
                m.d.comb += [getattr(lo, f"{name}_lo").eq(counter[:32]),
                             getattr(hi, f"{name}_hi").eq(latched)]
            else:
                m.d.comb += getattr(getattr(regs, name), name).eq(counter)
