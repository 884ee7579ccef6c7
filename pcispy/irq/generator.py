# SPDX-License-Identifier: BSD-2-Clause
"""The interrupt generator: a countdown that fires when it crosses zero, then reloads.

Pamette §5.2 raises its interrupt when a settable counter crosses zero, at pseudo-random
instants so that the measurements sample the whole ensemble of system activity. Three
reload modes (``irq.ctrl.mode`` in pcispy/irq/registers.py):

- ``one_shot``: fire once, ``delay`` clocks after the arm command, then stop;
- ``periodic``: then every ``period`` clocks;
- ``random``: then after gaps drawn uniformly from ``[min_gap, max_gap]``.

The random gaps come from a 32-bit maximal-length Galois LFSR, stepped 32 times per draw:
:mod:`.gaps` declares the modes and the draw (:data:`~.gaps.MODES`,
:func:`~.gaps.lfsr_draw`, :func:`~.gaps.random_gaps`), without Amaranth, so that the host
loads them without the gateware; this generator is derived from :func:`~.gaps.lfsr_draw`
(as a matrix over GF(2)), so the host can predict every gap from the seed.

Timing: with the arm command seen in clock ``a``, the first :attr:`fire` pulse is in clock
``a + delay - 1`` (so an interrupt requested from the next clock is raised exactly ``delay``
clocks after the arm), and the fires that follow are exactly one gap apart.
"""

from amaranth.hdl import Module, Signal, Cat
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from pcispy.irq.gaps import MODES, lfsr_draw
from pcispy.irq.registers import IRQ_MIN_GAP

__all__ = ["RefusalLayout", "InterruptGenerator"]


def _linear_map_hw(function, value, width=32):
    """``function`` (linear over GF(2) on ``width``-bit ints) applied to a signal: each
    output bit is the XOR of the input bits whose unit vectors reach it."""
    images = [function(1 << i) for i in range(width)]
    out_bits = []
    for j in range(width):
        taps = [value[i] for i in range(width) if images[i] >> j & 1]
        bit = taps[0]
        for tap in taps[1:]:
            bit = bit ^ tap
        out_bits.append(bit)
    return Cat(*out_bits)


#: Why an arm command was refused (one bit per reason; all zero when accepted).
RefusalLayout = data.StructLayout({
    "mode": 1,   # reserved mode code
    "delay": 1,  # delay below IRQ_MIN_GAP
    "gap": 1,    # period / min_gap below IRQ_MIN_GAP, or min_gap > max_gap
    "seed": 1,   # random mode with seed 0 (the LFSR would stay at 0)
    "busy": 1,   # the owner is busy (histogram clear)
})


class InterruptGenerator(wiring.Component):
    """Countdown with one-shot, periodic and pseudo-random reload.

    Settings are checked and taken when :attr:`arm` pulses; later changes to the setting
    inputs do nothing until the next arm. A refused arm changes nothing but
    :attr:`refused`.

    Ports:
        mode (In, 2): reload mode, a :data:`~.gaps.MODES` code.
        delay (In, 32): clocks from the arm to the first raise (>= IRQ_MIN_GAP).
        period (In, 32): periodic mode gap (>= IRQ_MIN_GAP).
        min_gap (In, 32), max_gap (In, 32): random mode gap bounds, inclusive.
        seed (In, 32): random mode LFSR seed (non-zero).
        arm (In, 1): check the settings and (re)start the countdown.
        stop (In, 1): stop the countdown (wins over ``arm`` in the same clock).
        busy (In, 1): refuse to arm (``refused.busy``).
        fire (Out, 1): the countdown crossed zero in this clock (one-clock pulse).
        running (Out, 1): the countdown is running.
        refused (Out, RefusalLayout): why the last arm was refused; zero after an
            accepted one.
    """
    #: Clocks from a reload until the next random gap is ready; IRQ_MIN_GAP covers it.
    PIPELINE = 3

    def __init__(self):
        assert IRQ_MIN_GAP >= self.PIPELINE + 1
        super().__init__({
            "mode": In(2), "delay": In(32), "period": In(32),
            "min_gap": In(32), "max_gap": In(32), "seed": In(32),
            "arm": In(1), "stop": In(1), "busy": In(1),
            "fire": Out(1), "running": Out(1), "refused": Out(RefusalLayout),
        })

    def elaborate(self, platform):
        m = Module()

        # Settings as taken at the last accepted arm.
        mode = Signal(2)
        period = Signal(32)
        min_gap = Signal(32)
        span = Signal(33)
        lfsr = Signal(32)

        # Next random gap, two registers behind the LFSR (the multiply is pipelined).
        scaled = Signal(65)
        next_random = Signal(32)
        m.d.sync += [
            scaled.eq(lfsr * span),
            next_random.eq(min_gap + scaled[32:]),
        ]

        count = Signal(32)
        m.d.comb += self.fire.eq(self.running & (count == 0))
        m.d.sync += count.eq(count - 1)
        with m.If(self.fire):
            with m.Switch(mode):
                with m.Case(MODES["one_shot"]):
                    m.d.sync += self.running.eq(0)
                with m.Case(MODES["periodic"]):
                    m.d.sync += count.eq(period - 1)
                with m.Case(MODES["random"]):
                    m.d.sync += [
                        count.eq(next_random - 1),
                        lfsr.eq(_linear_map_hw(lfsr_draw, lfsr)),
                    ]

        refusal = Signal(RefusalLayout)
        is_random = self.mode == MODES["random"]
        m.d.comb += [
            refusal.mode.eq(~sum(self.mode == code for code in MODES.values()).bool()),
            refusal.delay.eq(self.delay < IRQ_MIN_GAP),
            refusal.gap.eq(
                ((self.mode == MODES["periodic"]) & (self.period < IRQ_MIN_GAP)) |
                (is_random & ((self.min_gap < IRQ_MIN_GAP) | (self.min_gap > self.max_gap)))),
            refusal.seed.eq(is_random & (self.seed == 0)),
            refusal.busy.eq(self.busy),
        ]
        with m.If(self.stop):
            m.d.sync += self.running.eq(0)
        with m.Elif(self.arm):
            m.d.sync += self.refused.eq(refusal)
            with m.If(refusal.as_value() == 0):
                m.d.sync += [
                    mode.eq(self.mode),
                    period.eq(self.period),
                    min_gap.eq(self.min_gap),
                    span.eq(self.max_gap - self.min_gap + 1),
                    lfsr.eq(_linear_map_hw(lfsr_draw, self.seed)),
                    count.eq(self.delay - 2),
                    self.running.eq(1),
                ]
        return m
