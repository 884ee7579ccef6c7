# SPDX-License-Identifier: BSD-2-Clause
"""Local access shared with the PCI target: a :class:`SharedBackend` in front of a backend
of some latency, the target side issuing pipelined reads and writes while local requests
come in; every answer reaches its own requester, in order, with the right word. And
:class:`LocalAccess` refuses what no space holds."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from pcispy.pci.backend import BackendSignature
from pcispy.sidechannel.local import LocalAccess, SharedBackend
from pcispy.sidechannel.protocol import Space

pytestmark = pytest.mark.board

DEPTH = 64


class _Backend(wiring.Component):
    """A RAM answering reads two clocks after the request, not ready every other clock
    while ``stall`` is high (a slow backend)."""
    def __init__(self, width):
        self.width = width
        super().__init__({"bus": wiring.In(BackendSignature(6 - width // 64, width)),
                          "stall": wiring.In(1)})

    def elaborate(self, platform):
        m = Module()
        lanes = self.width // 32
        m.submodules.ram = ram = Memory(shape=self.width, depth=DEPTH // lanes,
                                        init=[_initial(i, lanes) for i in range(DEPTH // lanes)])
        rd = ram.read_port(domain="pci")
        wr = ram.write_port(domain="pci", granularity=8)
        bus = self.bus
        toggle = Signal()
        m.d.pci += toggle.eq(~toggle)
        m.d.comb += [bus.ready.eq(~(self.stall & toggle)), rd.addr.eq(bus.addr),
                     wr.addr.eq(bus.addr), wr.data.eq(bus.w_data)]
        take = bus.valid & bus.ready
        m.d.comb += wr.en.eq(bus.w_be.replicate(1) & (take & bus.write).replicate(lanes * 4))
        answer = Signal()
        data = Signal(self.width)
        m.d.pci += [answer.eq(take & ~bus.write), bus.r_valid.eq(answer), data.eq(rd.data)]
        m.d.comb += bus.r_data.eq(data)
        return m


def _initial(word, lanes):
    value = 0
    for lane in range(lanes):
        value |= (0x1000 + word * lanes + lane) << (32 * lane)
    return value


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("seed", [1, 2])
def test_target_and_local_share_a_backend(width, seed):
    rng = random.Random(seed)
    lanes = width // 32
    m = Module()
    m.submodules.shared = shared = SharedBackend(6 - lanes + 1, width)
    m.submodules.backend = backend = _Backend(width)
    wiring.connect(m, shared.backend, backend.bus)
    target, local = shared.target, shared.local
    dwords = {i: 0x1000 + i for i in range(DEPTH)}           # what the RAM holds
    log = {"target": [], "local": []}

    sim = Simulator(m)
    sim.add_clock(30e-9, domain="pci")

    async def target_side(ctx):
        # Bursts of pipelined reads of whole words (several in flight), and writes.
        expected = []
        for burst in range(12):
            write = rng.random() < 0.3
            start = rng.randrange(DEPTH // lanes - 8)
            ctx.set(backend.stall, rng.random() < 0.5)
            for k in range(rng.randrange(1, 8)):
                ctx.set(target.valid, 1)
                ctx.set(target.addr, start + k)
                ctx.set(target.write, write)
                value = rng.getrandbits(width)
                ctx.set(target.w_data, value)
                ctx.set(target.w_be, (1 << (width // 8)) - 1)
                while True:
                    # ready as it settled before the edge (it depends on the local side's
                    # request of the same clock).
                    _, _, taken = await ctx.tick("pci").sample(target.ready)
                    if ctx.get(target.r_valid):
                        log["target"].append(ctx.get(target.r_data))
                    if taken:
                        break
                if write:
                    for lane in range(lanes):
                        dwords[(start + k) * lanes + lane] = value >> (32 * lane) & 0xFFFFFFFF
                else:
                    expected.append(sum(dwords[(start + k) * lanes + lane] << (32 * lane)
                                        for lane in range(lanes)))
            ctx.set(target.valid, 0)
            for _ in range(rng.randrange(4)):
                await ctx.tick("pci")
                if ctx.get(target.r_valid):
                    log["target"].append(ctx.get(target.r_data))
        for _ in range(8):
            await ctx.tick("pci")
            if ctx.get(target.r_valid):
                log["target"].append(ctx.get(target.r_data))
        log["target_expected"] = expected

    async def local_side(ctx):
        # One request at a time; reads check the RAM as the target last wrote it.
        for _ in range(40):
            write = rng.random() < 0.3
            addr = rng.randrange(DEPTH)
            value = rng.getrandbits(32)
            ctx.set(local.valid, 1)
            ctx.set(local.addr, addr)
            ctx.set(local.write, write)
            ctx.set(local.w_data, value)
            for _ in range(500):                           # the target leaves gaps
                _, _, taken = await ctx.tick("pci").sample(local.ready)
                if taken:
                    break
            else:
                raise AssertionError(f"seed {seed}: the local request is never taken")
            ctx.set(local.valid, 0)
            # The answer comes at least a clock later (r_valid, read now, is the last clock's).
            for _ in range(100):
                if ctx.get(local.r_valid):
                    break
                await ctx.tick("pci")
            else:
                raise AssertionError(f"seed {seed}: no answer to the local request")
            if write:
                dwords[addr] = value
                log["local"].append(("write", addr))
            else:
                log["local"].append(("read", addr, ctx.get(local.r_data), dwords[addr]))
            await ctx.tick("pci")

    sim.add_testbench(target_side)
    sim.add_testbench(local_side)
    sim.run()
    assert log["target"] == log["target_expected"], f"seed {seed}"
    reads = [entry for entry in log["local"] if entry[0] == "read"]
    assert reads and all(got == want for _, _, got, want in reads), f"seed {seed}: {reads}"
    assert len(log["local"]) == 40


def test_local_access_refuses_what_no_space_holds():
    m = Module()
    m.submodules.access = access = LocalAccess({Space.BAR0: 4})
    sim = Simulator(m)
    sim.add_clock(30e-9, domain="pci")
    seen = []

    async def bench(ctx):
        req, bar0 = access.request, access.bar0
        ctx.set(bar0.ready, 1)
        for space, addr in ((Space.BAR0, 15), (Space.BAR0, 16), (Space.BAR1, 0), (3, 0)):
            ctx.set(req.valid, 1)
            ctx.set(req.space, space)
            ctx.set(req.addr, addr)
            forwarded = ctx.get(bar0.valid)
            assert ctx.get(req.ready) == 1
            await ctx.tick("pci")
            ctx.set(req.valid, 0)
            seen.append((forwarded, ctx.get(req.r_valid), ctx.get(req.r_error)))
            await ctx.tick("pci")
    sim.add_testbench(bench)
    sim.run()
    assert seen == [(1, 0, 0), (0, 1, 1), (0, 1, 1), (0, 1, 1)]
