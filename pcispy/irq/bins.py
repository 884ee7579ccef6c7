# SPDX-License-Identifier: BSD-2-Clause
"""The bins of the interrupt-latency histogram (:mod:`.histogram`), log-scaled.

Interrupt latencies span four decades (a few microseconds typical, tails past a
millisecond: Pamette Figures 4 and 5, log-log), so bins grow with the value: latencies
below ``2 * BINS_PER_OCTAVE`` clocks get one bin each, and every octave above is split
into ``BINS_PER_OCTAVE`` equal bins (a floating-point number with ``SUB_BITS`` bits of
mantissa). The last bin also holds everything above it.

:func:`bin_of`, :func:`bin_low`, :func:`bin_high` and :func:`bin_edges` are the one
declaration of the bins: the host labels bins with them, and the gateware computes the
same index in hardware from :data:`SUB_BITS` (tests check the two agree). Plain Python (no
Amaranth): the host loads them without the gateware.
"""

__all__ = ["SUB_BITS", "BINS_PER_OCTAVE", "DEFAULT_BINS", "bin_of", "bin_low", "bin_high",
           "bin_edges"]

#: Bits of mantissa kept per latency: each octave has ``2**SUB_BITS`` bins.
SUB_BITS = 2
BINS_PER_OCTAVE = 1 << SUB_BITS
#: 128 bins with 4 per octave reach 2**33 clocks (about 4 minutes at 33 MHz).
DEFAULT_BINS = 128


def bin_of(latency, nbins=DEFAULT_BINS):
    """The bin index of a latency (clocks, >= 0)."""
    if latency < 0:
        raise ValueError(f"latency {latency} is negative")
    if latency < BINS_PER_OCTAVE:
        index = latency
    else:
        octave = latency.bit_length() - 1                   # position of the top bit
        mantissa = (latency >> (octave - SUB_BITS)) & (BINS_PER_OCTAVE - 1)
        index = BINS_PER_OCTAVE * (octave - SUB_BITS + 1) + mantissa
    return min(index, nbins - 1)


def bin_low(index):
    """The smallest latency counted in bin ``index``."""
    if index < BINS_PER_OCTAVE:
        return index
    octave = index // BINS_PER_OCTAVE + SUB_BITS - 1
    mantissa = index % BINS_PER_OCTAVE
    return (BINS_PER_OCTAVE + mantissa) << (octave - SUB_BITS)


def bin_high(index, nbins=DEFAULT_BINS):
    """One past the largest latency counted in bin ``index``; ``None`` for the last bin."""
    return None if index == nbins - 1 else bin_low(index + 1)


def bin_edges(nbins=DEFAULT_BINS):
    """``[(low, high), ...]`` for every bin; ``high`` is exclusive, ``None`` for the last."""
    return [(bin_low(i), bin_high(i, nbins)) for i in range(nbins)]
