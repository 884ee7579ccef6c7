# SPDX-License-Identifier: BSD-2-Clause
"""The programmable response of the exerciser windows (BAR2 memory, BAR3 I/O).

:class:`ExerciserResponse` owns the ``target`` block of the register map: it checks every
write against what the target can honour and what the specification allows, refuses the
impossible ones (the register keeps its value, ``target.status.bad_*`` says why), turns
the accepted values into the :class:`~pcispy.core.target.ResponseKnobs` the target
applies, decides which attempts are retried, arms one-shot parity corruption and counts
what happened.
"""

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pcispy.csr.bank import BlockSignature
from pcispy.pci.bus import DevselSpeed
from pcispy.core.target import ResponseKnobs
from pcispy.exerciser.registers import (TARGET, TARGET_MAX_INITIAL_LATENCY,
                                        TARGET_MAX_SUBSEQUENT_LATENCY, decode_resets)

__all__ = ["ExerciserResponse"]


class ExerciserResponse(wiring.Component):
    """Registers and sequencing of the exerciser target, in clock domain ``pci``.

    Ports:
        regs (In, BlockSignature of the ``target`` block): wired to ``bank.target``.
        knobs (Out, ResponseKnobs): to the target.
        retry (Out, 1): to the target: retry the attempt claimed now.
        attempt (In, 1): from the target: an exerciser transaction is claimed.
        corrupt_taken (In, 1): from the target: a read word left with inverted PAR.
        aborted (In, 1): from the target: a target abort was signaled.
        parity_error (In, 1): a parity error was detected (address or write data).

    Parameters:
        decode: the target's decode speed (:class:`DevselSpeed`): a DEVSEL# faster than
            it is refused.
    """
    def __init__(self, *, decode=DevselSpeed.MEDIUM):
        self.decode = decode
        block = TARGET.with_resets(decode_resets(decode))
        super().__init__({
            "regs": In(BlockSignature(block)),
            "knobs": Out(ResponseKnobs), "retry": Out(1),
            "attempt": In(1), "corrupt_taken": In(1), "aborted": In(1),
            "parity_error": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        allow = regs.response.allow_noncompliant

        # response: DEVSEL# speed and initial latency.
        new_speed = regs.response.w_data[0:2]
        new_wait = regs.response.w_data[8:16]
        new_allow = regs.response.w_data[31]
        # The speed's code counts clocks after clock 2 (fast): DEVSEL#, and at the
        # earliest the first TRDY#, come on clock speed + 2, speed + 1 clocks after
        # FRAME#. The target delays its own decode's DEVSEL# by the difference (knobs
        # below), which cannot be negative.
        bad_devsel = new_speed < self.decode.value
        latency = new_speed + 1 + new_wait
        bad_latency = ~new_allow & (latency > TARGET_MAX_INITIAL_LATENCY)
        with m.If(regs.response.w_stb):
            m.d.comb += regs.response.refuse.eq(bad_devsel | bad_latency)
            m.d.comb += [regs.status.bad_devsel_set.eq(bad_devsel),
                         regs.status.bad_latency_set.eq(bad_latency & ~bad_devsel)]

        # wait: a period of 0 cannot be honoured; long waits break the 8-clock rule.
        every = regs.wait.w_data[0:8]
        clocks = regs.wait.w_data[8:12]
        bad_wait = ((clocks != 0) & (every == 0)) | \
            (~allow & (clocks + 1 > TARGET_MAX_SUBSEQUENT_LATENCY))
        with m.If(regs.wait.w_stb):
            m.d.comb += [regs.wait.refuse.eq(bad_wait), regs.status.bad_wait_set.eq(bad_wait)]

        # retry: retrying every attempt never lets a transaction through.
        bad_retry = ~allow & (regs.retry.w_data[8:16] == 1)
        with m.If(regs.retry.w_stb):
            m.d.comb += [regs.retry.refuse.eq(bad_retry),
                         regs.status.bad_retry_set.eq(bad_retry)]

        # control: an abort range must not be empty.
        bad_abort = regs.control.w_data[0] & (regs.abort_first.abort_first
                                              > regs.abort_last.abort_last)
        with m.If(regs.control.w_stb):
            m.d.comb += [regs.control.refuse.eq(bad_abort),
                         regs.status.bad_abort_set.eq(bad_abort)]
        m.d.comb += regs.status.parity_error_set.eq(self.parity_error)

        # Retry sequencing: the first K attempts after a retry write, then every Nth.
        first_left = Signal(8)
        count = Signal(8)
        with m.If(regs.retry.w_stb & ~regs.retry.refuse):
            m.d.pci += [first_left.eq(regs.retry.w_data[0:8]), count.eq(0)]
        with m.Elif(self.attempt):
            with m.If(first_left != 0):
                m.d.pci += first_left.eq(first_left - 1)
            with m.Elif(regs.retry.every != 0):
                m.d.pci += count.eq(Mux(count + 1 == regs.retry.every, 0, count + 1))
        m.d.comb += self.retry.eq((first_left != 0) | ((regs.retry.every != 0)
                                                       & (count + 1 == regs.retry.every)))

        # One-shot parity corruption.
        armed = Signal()
        with m.If(regs.control.corrupt_next):
            m.d.pci += armed.eq(1)
        with m.Elif(self.corrupt_taken):
            m.d.pci += armed.eq(0)

        m.d.comb += [
            self.knobs.devsel_delay.eq(regs.response.devsel_speed - self.decode.value),
            self.knobs.initial_wait.eq(regs.response.initial_wait),
            self.knobs.wait_every.eq(regs.wait.every),
            self.knobs.wait_clocks.eq(regs.wait.clocks),
            self.knobs.disconnect_after.eq(regs.disconnect.after),
            self.knobs.disconnect_data.eq(regs.disconnect.with_data),
            self.knobs.abort_enable.eq(regs.control.abort_enable),
            self.knobs.abort_first.eq(regs.abort_first.abort_first),
            self.knobs.abort_last.eq(regs.abort_last.abort_last),
            self.knobs.ack64.eq(regs.control.ack64),
            self.knobs.corrupt.eq(regs.control.corrupt_par),
            self.knobs.corrupt_once.eq(armed),
        ]

        # Counters.
        for name, event in (("attempts", self.attempt), ("aborted", self.aborted),
                            ("corrupted", self.corrupt_taken)):
            counter = getattr(getattr(regs, name), name)
            with m.If(event):
                m.d.pci += counter.eq(counter + 1)
        with m.If(self.attempt & self.retry):
            m.d.pci += regs.retried.retried.eq(regs.retried.retried + 1)
        return m
