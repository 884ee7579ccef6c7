# SPDX-License-Identifier: BSD-2-Clause
"""pcispy.irq: interrupt-latency measurement (Pamette §5, Shand RR-19 §3).

- :mod:`.timer`: the free-running 64-bit cycle counter, atomic lo/hi reads;
- :mod:`.generator`: the interrupt generator (one-shot, periodic, LFSR-random gaps);
  :mod:`.gaps`, its modes and random gaps as the host predicts them (no Amaranth);
- :mod:`.markers`: the timestamped checkpoint FIFO;
- :mod:`.histogram`: the log-binned latency histogram; :mod:`.bins`, its bin edges (no
  Amaranth);
- :mod:`.unit`: :class:`~.unit.InterruptUnit`, all of the above as the board wires it.
"""
