# SPDX-License-Identifier: BSD-2-Clause
"""Interrupt service in simulation: the host bridge's interrupt responder plays the handler.

On hardware the host program services each interrupt itself (wait, write the acknowledge,
write checkpoints). In the simulated system the bus model
:class:`~pcispy.sim.bfm.irq_responder.InterruptResponder` does it in RTL, so no Python runs
between the raise and the acknowledge: it writes the board's acknowledge register a drawn
delay after INTA# (the profile's ``irq_ack_delay``, uniform) and then one checkpoint, the
"user thread woke" marker, :data:`USER_WAKEUP_CLOCKS` after the acknowledge completed.

A feature finds this object as ``transport.interrupt_service`` (``None`` on hardware) and
uses :meth:`ResponderService.start`, :meth:`ResponderService.serviced` and
:meth:`ResponderService.stop`. Every responder log entry (drawn delay and timestamps in
the responder's clock) is kept in :attr:`ResponderService.log`, for tests to compare with
what the board measured.
"""

from pcispy.host.errors import PcispyError
from pcispy.sim.bfm.irq_responder import InterruptResponderDriver, REGISTERS, IrqReg
from pcispy.sim.system import Agent

__all__ = ["ResponderService", "USER_WAKEUP_CLOCKS"]

#: Clocks from the completed acknowledge to the user-thread checkpoint (a scheduler
#: wake-up of about 2 µs at 33 MHz).
USER_WAKEUP_CLOCKS = 60


class ResponderService:
    """The simulated host's interrupt handler, for one board.

    Parameters:
        system: a started :class:`pcispy.sim.api.SimSystem`.
        bars: the board's BARs as enumeration assigned them (``{index: {"address": ...}}``).
        delay_range: ``(min, max)`` clocks from INTA# to the acknowledge; default: the
            profile's ``irq_ack_delay``.
        user_offset: clocks from the completed acknowledge to the user checkpoint.
    """
    def __init__(self, system, bars, *, delay_range=None, user_offset=USER_WAKEUP_CLOCKS):
        self.system = system
        self.bar0 = bars[0]["address"]
        self.delay_range = tuple(delay_range or system.profile.irq_ack_delay)
        self._longest = self.delay_range[1]     # the delay a handler may take at most
        self.user_offset = user_offset
        self.ctl = system.ctl[Agent.IRQ_RESPONDER]
        self.driver = InterruptResponderDriver(self.ctl)
        #: Every log entry taken so far (dicts: delay, t_irq, t_ack, t_ckpt).
        self.log = []
        #: Entries of interrupts taken after the last one a feature waited for.
        self.extra = []
        self._queue = []

    async def start(self, *, ack_offset, ack_value, checkpoint_offset, delay_range=None,
                    hold_cpu=False):
        """Respond to INTA#: write ``ack_value`` at BAR0 + ``ack_offset``, then one write
        at BAR0 + ``checkpoint_offset`` (None: none). ``delay_range``: ``(min, max)``
        clocks from INTA# to the acknowledge (default: the service's); ``hold_cpu``: the
        handler runs on the host's CPU, which issues nothing else meanwhile."""
        low, high = delay_range or self.delay_range
        self._longest = high
        checkpoints = () if checkpoint_offset is None else (self.user_offset,)
        try:
            await self.driver.configure(
                ack_addr=self.bar0 + ack_offset, ack_value=ack_value,
                delay_range=(low, high), checkpoints=checkpoints,
                ckpt_addr=self.bar0 + (checkpoint_offset or 0), seed=self.system.seed,
                hold_cpu=hold_cpu)
        except ValueError as error:
            raise PcispyError(f"simulated interrupt service: {error}") from None
        await self.driver.entries()          # skip whatever was logged before
        self._queue = []

    async def serviced(self, timeout_s):
        """Wait until the responder has acknowledged one more interrupt and written its
        checkpoint; False if none within ``timeout_s`` of simulated time."""
        if not self._queue:
            clocks = max(1, int(timeout_s * self.system.clock_mhz * 1e6))
            try:
                await self.ctl.wait_event(timeout=clocks)
            except TimeoutError:
                return False
            self._queue = await self.driver.entries()
        self.log.append(self._queue.pop(0))
        return True

    async def stop(self):
        """Stop responding, and wait until an interrupt already taken is finished (its
        late acknowledge must not land in the next measurement). Its log entry, if any,
        goes to :attr:`extra`."""
        await self.ctl.write(IrqReg.CONTROL, 0)
        busy = REGISTERS["STATUS"].field("busy").mask
        # Control-port reads do not touch the bus; one every 16 clocks is plenty.
        for _ in range((self._longest + 4 * self.user_offset) // 16 + 64):
            if not await self.ctl.read(IrqReg.STATUS) & busy:
                break
            await self.ctl.clocks(16)
        else:
            raise PcispyError("simulated interrupt service: the responder did not finish")
        self.extra = self._queue + await self.driver.entries()
        self._queue = []
