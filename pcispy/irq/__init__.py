# SPDX-License-Identifier: BSD-2-Clause
"""pcispy.irq: interrupt-latency measurement (Pamette §5, Shand RR-19 §3).

- :mod:`.timer`: the free-running 64-bit cycle counter, atomic lo/hi reads;
- :mod:`.generator`: the interrupt generator (one-shot, periodic, LFSR-random gaps);
- :mod:`.markers`: the timestamped checkpoint FIFO;
- :mod:`.histogram`: the log-binned latency histogram and its bin edges;
- :mod:`.unit`: :class:`~.unit.InterruptUnit`, all of the above as the board wires it.
"""
