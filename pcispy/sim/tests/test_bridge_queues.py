# SPDX-License-Identifier: BSD-2-Clause
"""The bridge's posted-write buffer against a Python model of it, in Amaranth's
simulator: seeded random pushes, closes and pops, every clock's head compared."""

import random

import pytest
from amaranth.sim import Simulator

from pcispy.sim.bfm.bridge_queues import PostedWriteBuffer

pytestmark = pytest.mark.bfm


class _Model:
    """Segments as lists of (address, data, be), the open one last."""

    def __init__(self):
        self.queue = []          # [address, [words], closed]

    def level(self):
        return sum(len(s[1]) for s in self.queue)

    def head(self):
        if self.queue and self.queue[0][1]:
            address, words, closed = self.queue[0]
            return address, len(words), closed or len(self.queue) > 1, words[0][0]
        return None

    def step(self, push, new, address, word, close, pop):
        if pop:
            self.queue[0][0] += 1
            self.queue[0][1].pop(0)
        if push:
            if new:
                if self.queue:
                    self.queue[-1][2] = True
                self.queue.append([address, [word], close])
            else:
                self.queue[-1][1].append(word)
        if close and self.queue and not new:
            self.queue[-1][2] = True
        while self.queue and not self.queue[0][1] and (self.queue[0][2] or len(self.queue) > 1):
            self.queue.pop(0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_posted_buffer_against_model(seed):
    rng = random.Random(seed)
    dut = PostedWriteBuffer(words=8, segments=4)
    model = _Model()

    async def bench(ctx):
        writing = False
        address = 0
        for clock in range(3000):
            head = model.head()
            assert ctx.get(dut.head_valid) == (head is not None), (seed, clock, model.queue)
            if head is not None:
                got = (ctx.get(dut.head_addr), ctx.get(dut.head_count),
                       ctx.get(dut.head_closed), ctx.get(dut.head_data))
                assert got == head, (seed, clock, got, head)
            assert ctx.get(dut.space) == 8 - model.level(), (seed, clock)
            pop = head is not None and rng.random() < 0.4
            push = new = close = False
            if not writing and rng.random() < 0.3 and ctx.get(dut.space) > 0 \
                    and ctx.get(dut.seg_space):
                push, new, writing = True, True, True
                address = rng.randrange(1 << 20)
                close = rng.random() < 0.3
                writing = not close
            elif writing and rng.random() < 0.5:
                if ctx.get(dut.space) > 0 and rng.random() < 0.7:
                    push = True
                close = rng.random() < 0.3
                writing = not close
            word = rng.getrandbits(32)
            ctx.set(dut.w_en, push)
            ctx.set(dut.w_new, new)
            ctx.set(dut.w_addr, address)
            ctx.set(dut.w_data, word)
            ctx.set(dut.w_be, 0)
            ctx.set(dut.w_close, close)
            ctx.set(dut.pop, pop)
            model.step(push, new, address, (word, 0), close, pop)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
