# SPDX-License-Identifier: BSD-2-Clause
"""The UART side channel in Amaranth's simulator: the real gateware, the real host
transport, a simulated wire between them.

:class:`SideChannelBench` is :class:`~pcispy.sidechannel.sidechannel.SideChannel`
(domain ``sync``) wired to :class:`~pcispy.board.top.PCIBoard`'s ``local`` port (domain
``pci``, an unrelated clock), the board's pins idle. BAR1 is answered by a small memory
holding :func:`trace_word` (``PCIBoard(external_trace=True)``: the board's own sharing
path, a pattern the test knows instead of a capture). :class:`SimulatedWire` is a
:class:`~pcispy.host.transports.uart.ByteStream` that sends bytes bit by bit on the
UART pins, decodes the board's answers, and loses or corrupts chosen bytes on the way.
:class:`SimulatedSideChannel` runs an ``async def body(transport, ctx, bench)`` with a
:class:`~pcispy.host.transports.uart.UartTransport` on that wire, or bridges the wire to
a TCP socket so that ``pcispy --uart socket://HOST:PORT`` reaches the
simulated board.
"""

import collections
import select

from amaranth import ClockDomain, ClockSignal, Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out
from amaranth.sim import Simulator

from pcispy.board.clock_meter import OscillatorGate
from pcispy.csr.bank import CSRBank
from pcispy.core.config import BarSpec, ConfigSpace
from pcispy.core.pads import simulation_ports
from pcispy.pci.backend import BackendSignature
from pcispy.board.registers import BAR0_SIZE, DEFAULT_DEVICE_ID, DEFAULT_VENDOR_ID, REGISTER_MAP
from pcispy.sidechannel.local import LocalAccess, LocalAccessSignature, SharedBackend
from pcispy.sidechannel.protocol import (MAX_WORDS, SOF, STATUS_COUNTERS, Opcode,
                                         Space, ResponseStatus, frame)
from pcispy.sidechannel.sidechannel import SideChannel
from pcispy.board.top import PCIBoard
from pcispy.host.transports.uart import ByteStream, UartTransport

__all__ = ["SideChannelBench", "BoardPart", "SimulatedWire", "SimulatedSideChannel",
           "trace_word", "measure_bulk_read",
           "SYNC_PERIOD", "PCI_PERIOD", "SLOW_PCI_PERIOD", "DIVISOR", "CLOCK_GATE_LOG2"]

#: Clock periods (s): the board oscillator (25 MHz) and a PCI clock unrelated to it.
SYNC_PERIOD = 40e-9
PCI_PERIOD = 30.3e-9
#: The PCI clock of the benches with the whole board: 5 MHz, as legal as 33 (PCI's
#: clock may be anything up to 33 MHz). The whole board's logic runs on it and costs
#: most of Amaranth's simulator time, so fewer PCI clocks per UART bit make those
#: benches four times as fast; the clock meter then measures a clock far from 33.
SLOW_PCI_PERIOD = 200e-9
#: Clocks per UART bit in the simulation.
DIVISOR = 4
#: log2 of the BAR1 trace window's 16-byte slots on the simulated board.
TRACE_ADDR_BITS = 4
#: log2 of the clock meter's gate in microseconds on the simulated board (8 us: a board's
#: 1024 us would be 34,000 PCI clocks of simulation per measurement).
CLOCK_GATE_LOG2 = 3


def trace_word(index):
    """The word at DWORD ``index`` of the simulated BAR1 (every byte value occurs,
    SOF and ESC included, so answers need escaping)."""
    return (index * 0x9E3779B1 + 0xA5DB5A20) & 0xFFFFFFFF


class _TraceMemory(wiring.Component):
    """BAR1's backend on the bench: a ROM of :func:`trace_word`, answering a clock after
    each request."""
    def __init__(self, signature):
        super().__init__({"bus": wiring.In(signature)})
        self.depth = 1 << len(self.bus.addr)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rom = rom = Memory(shape=32, depth=self.depth,
                                        init=[trace_word(i) for i in range(self.depth)])
        port = rom.read_port(domain="pci")
        bus = self.bus
        m.d.comb += [bus.ready.eq(1), port.addr.eq(bus.addr), bus.r_data.eq(port.data)]
        m.d.pci += bus.r_valid.eq(bus.valid & ~bus.write)
        return m


class BoardPart(wiring.Component):
    """The part of :class:`~pcispy.board.top.PCIBoard` the side channel reaches, built
    from the same classes and shared the same way (a :class:`SharedBackend` per space,
    behind :class:`LocalAccess`, with the target's side idle): the real CSR bank of the
    register map (BAR0), the real configuration space (BAR0 and BAR1 declared), BAR1
    answered by the trace ROM. The whole board is ~10 times slower in Amaranth's
    simulator; :class:`SideChannelBench` takes either.

    Ports:
        local (In, LocalAccessSignature()): as ``PCIBoard.local``.
    """
    def __init__(self):
        super().__init__({"local": wiring.In(LocalAccessSignature())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.bank = bank = CSRBank(REGISTER_MAP)
        bars = [BarSpec("registers", "mem", BAR0_SIZE),
                BarSpec("trace", "mem", 16 << TRACE_ADDR_BITS, prefetchable=True)]
        m.submodules.config = config = ConfigSpace(bars, vendor_id=DEFAULT_VENDOR_ID,
                                                   device_id=DEFAULT_DEVICE_ID)
        m.submodules.trace = trace = _TraceMemory(BackendSignature(TRACE_ADDR_BITS + 2))
        shared = {}
        for space, backend in ((Space.CONFIG, config.access), (Space.BAR0, bank.access),
                               (Space.BAR1, trace.bus)):
            shared[space] = s = m.submodules[f"shared_{space.name.lower()}"] = SharedBackend(
                len(backend.addr), len(backend.w_data))
            wiring.connect(m, s.backend, backend)
        m.submodules.local_access = local_access = LocalAccess(
            {space: len(s.local.addr) for space, s in shared.items()})
        wiring.connect(m, wiring.flipped(self.local), local_access.request)
        for space, s in shared.items():
            wiring.connect(m, getattr(local_access, space.name.lower()), s.local)
        return m


class SideChannelBench(wiring.Component):
    """The side channel and the board core, as on the FPGA (domains ``sync``, ``pci``).

    Ports:
        rx (In, 1), tx (Out, 1): the UART pins (see :class:`SideChannel`).
        writes (Out, 32): local writes the board has taken (counted at its port, ``pci``).
        pci_clock (In, 1): the PCI clock runs (domain ``pci`` is ``pci_free`` gated).
        clocks (Out, 32): ``sync`` clocks since the start (to time transfers).

    Parameters:
        divisor, pci_timeout: of the :class:`SideChannel`.
        full: the whole :class:`PCIBoard` (BAR1 from the trace ROM through its
            ``external_trace`` port, its clock meter gated from ``sync`` as on a board)
            instead of :class:`BoardPart`.
        passive: with ``full``: the passive build's board (every PCI pin an input).
    """
    def __init__(self, divisor=DIVISOR, pci_timeout=2000, full=False, passive=False):
        self.side = SideChannel(divisor, pci_timeout=pci_timeout)
        self.full = full
        self.board = (PCIBoard(32, simulation_ports(32, passive=passive),
                               spy_addr_bits=TRACE_ADDR_BITS, external_trace=True,
                               clock_gate_log2=CLOCK_GATE_LOG2)
                      if full else BoardPart())
        super().__init__({"rx": wiring.In(1, init=1), "tx": Out(1, init=1), "writes": Out(32),
                          "pci_clock": wiring.In(1, init=1), "clocks": Out(32)})

    def elaborate(self, platform):
        m = Module()
        # Domain pci runs from the free-running clock pci_free while pci_clock is high
        # (a test stops it to play a PCI bus without clock).
        m.domains.pci = ClockDomain("pci")
        m.d.comb += ClockSignal("pci").eq(ClockSignal("pci_free") & self.pci_clock)
        m.submodules.side = side = self.side
        m.submodules.board = board = self.board
        if self.full:
            m.submodules.trace = trace = _TraceMemory(board.trace.signature)
            wiring.connect(m, board.trace, trace.bus)
            m.submodules.clock_gate = gate = OscillatorGate(round(1 / SYNC_PERIOD),
                                                            CLOCK_GATE_LOG2)
            m.d.comb += board.clock_gate.eq(gate.toggle)
        wiring.connect(m, side.local, board.local)
        m.d.comb += [side.rx.eq(self.rx), self.tx.eq(side.tx)]
        m.d.sync += self.clocks.eq(self.clocks + 1)
        with m.If(board.local.valid & board.local.ready & board.local.write):
            m.d.pci += self.writes.eq(self.writes + 1)
        return m

    def counters(self, ctx):
        """The frame engine's counters now."""
        return {name: ctx.get(getattr(self.side, f"count_{name}")) for name in STATUS_COUNTERS}


class SimulatedWire(ByteStream):
    """The UART line pair of a :class:`SideChannelBench`, as a byte stream.

    ``faults`` says what happens to the ``n``-th byte (from 0) sent in a direction
    ("host": to the board, "board": to the host): a dict ``{(direction, n): fault}`` or a
    function ``fault(direction, n, byte)``; a fault is ``None`` (the byte is lost), an int
    XORed into the byte, or 0 (untouched). ``lost`` and ``corrupted`` count bytes,
    ``damaged[direction]`` frames (a SOF byte starts a frame) with a byte lost or changed.
    """
    def __init__(self, bench, bit_time, faults=None):
        self.bench = bench
        self.bit_time = bit_time
        self.to_board = collections.deque()
        self.from_board = bytearray()
        self.reset(faults)
        self.ctx = None                      # the testbench's context (read, sleep)

    def reset(self, faults=None):
        """New faults; the byte and damage counts start again."""
        self.faults = faults if callable(faults) else (
            lambda direction, n, byte, plan=dict(faults or {}): plan.get((direction, n), 0))
        self.sent = {"host": 0, "board": 0}
        self.damaged = {"host": 0, "board": 0}
        self._frame_hit = {"host": False, "board": False}
        self.lost = self.corrupted = 0

    def _through(self, direction, byte):
        n = self.sent[direction]
        self.sent[direction] += 1
        if byte == SOF:
            self._frame_hit[direction] = False
        fault = self.faults(direction, n, byte)
        if fault == 0:
            return [byte]
        if not self._frame_hit[direction]:
            self._frame_hit[direction] = True
            self.damaged[direction] += 1
        if fault is None:
            self.lost += 1
            return []
        self.corrupted += 1
        return [byte ^ fault]

    async def write(self, data):
        for byte in data:
            self.to_board.extend(self._through("host", byte))

    async def read(self, timeout_s):
        waited = 0.0
        while not self.from_board and waited < timeout_s:
            step = min(10 * self.bit_time, timeout_s - waited)
            await self.ctx.delay(step)
            waited += step
        data, self.from_board = bytes(self.from_board), bytearray()
        return data

    async def sleep(self, seconds):
        await self.ctx.delay(seconds)

    async def drive(self, ctx):
        """Background testbench: send the queued bytes on ``rx``, 8N1."""
        while True:
            if not self.to_board:
                await ctx.delay(self.bit_time)
                continue
            byte = self.to_board.popleft()
            for bit in [0] + [byte >> i & 1 for i in range(8)] + [1]:
                ctx.set(self.bench.rx, bit)
                await ctx.delay(self.bit_time)

    async def sample(self, ctx):
        """Background testbench: decode the board's bytes on ``tx`` (sampled mid-bit)."""
        while True:
            await ctx.negedge(self.bench.tx)
            await ctx.delay(1.5 * self.bit_time)
            byte = 0
            for i in range(8):
                byte |= ctx.get(self.bench.tx) << i
                await ctx.delay(self.bit_time)
            if ctx.get(self.bench.tx):                 # stop bit
                self.from_board.extend(self._through("board", byte))


class SimulatedSideChannel:
    """A simulator of a :class:`SideChannelBench`, built once and run many times (building
    it costs more than a run).

    Parameters:
        divisor, pci_timeout, full, passive: of the :class:`SideChannelBench`.
        pci_period: the PCI clock's period in seconds.
    """
    def __init__(self, *, divisor=DIVISOR, pci_timeout=2000, full=False, passive=False,
                 pci_period=PCI_PERIOD):
        self.bench = bench = SideChannelBench(divisor, pci_timeout, full, passive)
        self.pci_period = pci_period
        self.pci_timeout = pci_timeout
        self.divisor = divisor
        self.bit_time = divisor * SYNC_PERIOD
        self.wire = wire = SimulatedWire(bench, self.bit_time)
        self.sim = sim = Simulator(bench)
        sim.add_clock(SYNC_PERIOD, domain="sync")
        sim.add_clock(pci_period, domain="pci_free")
        sim.add_testbench(wire.drive, background=True)
        sim.add_testbench(wire.sample, background=True)

        async def idle_pins(ctx):
            # Every PCI line high: no transaction (low = asserted).
            for port in (bench.board.ports.values() if bench.full else ()):
                ctx.set(port.i, (1 << len(port.i)) - 1)
        sim.add_testbench(idle_pins)
        # Amaranth takes no testbench once the simulation ran: one background testbench
        # runs the jobs of run() and serve(), and they advance the simulation until done.
        self._jobs = collections.deque()

        async def dispatcher(ctx):
            while True:
                if not self._jobs:
                    await ctx.delay(10 * self.bit_time)
                    continue
                job, done = self._jobs.popleft()
                try:
                    done["value"] = await job(ctx)
                except BaseException as error:
                    done["error"] = error
        sim.add_testbench(dispatcher, background=True)

    def _run_job(self, job):
        done = {}
        self._jobs.append((job, done))
        while not done:
            self.sim.advance()
        if "error" in done:
            raise done["error"]
        return done["value"]

    def run(self, body, *, faults=None, seq=0, retries=8):
        """Run ``await body(transport, ctx, bench)`` in a testbench with a new
        :class:`UartTransport` (session not opened: ``body`` decides) on the wire with
        ``faults`` (numbered from this run's first byte); return its result."""
        wire = self.wire
        wire.reset(faults)

        async def job(ctx):
            wire.ctx = ctx
            transport = UartTransport(
                wire, baud=1 / self.bit_time, name="the simulated UART", seq=seq,
                retries=retries, latency_s=(self.pci_timeout + 400) * SYNC_PERIOD,
                quiet_s=40 * self.bit_time)
            transport.wire = wire
            return await body(transport, ctx, self.bench)
        return self._run_job(job)

    def serve(self, listener):
        """Bridge the simulated board's UART to the first client of ``listener`` (a
        listening TCP socket) until it disconnects: ``pcispy --uart socket://HOST:PORT``
        reaches it."""
        wire = self.wire
        client, _ = listener.accept()
        client.setblocking(False)

        async def job(ctx):
            while True:
                if wire.from_board:
                    client.setblocking(True)
                    client.sendall(bytes(wire.from_board))
                    client.setblocking(False)
                    wire.from_board.clear()
                readable, _, _ = select.select([client], [], [], 0)
                if readable:
                    try:
                        data = client.recv(4096)
                    except ConnectionResetError:
                        data = b""
                    if not data:
                        break
                    wire.to_board.extend(data)
                await ctx.delay(10 * self.bit_time)
        try:
            self._run_job(job)
        finally:
            client.close()


def measure_bulk_read(side=None, seq=230):
    """Time a read of BAR1's first ``MAX_WORDS + 1`` words (two BULK_READ frames, one
    full) from the first request to the last answer's last byte. Returns the ``words``
    read, and ``{"measured", "computed"}`` payload bytes per bit time (the computed figure
    counts the wire bits of the four frames and nothing else: no turnaround) and
    ``bit_times`` measured."""
    side = side or SimulatedSideChannel()
    count = MAX_WORDS + 1

    async def body(transport, ctx, bench):
        await transport.open()
        start = ctx.get(bench.clocks)
        words = await transport.read_block(1, 0, count)
        return ctx.get(bench.clocks) - start, words
    clocks, words = side.run(body, seq=seq)
    bit_times = clocks / side.divisor
    wire_bytes = 0
    for i, (first, n) in enumerate(((0, MAX_WORDS), (MAX_WORDS, count - MAX_WORDS))):
        wire_bytes += len(frame(seq + 2 + i, Opcode.BULK_READ,
                                bytes((Space.BAR1, first, 0, 0, n))))
        wire_bytes += len(frame(seq + 2 + i, ResponseStatus.OK, b"".join(
            trace_word(first + k).to_bytes(4, "little") for k in range(n))))
    return {"words": words, "measured": 4 * count / bit_times,
            "computed": 4 * count / (10 * wire_bytes), "bit_times": bit_times}
