# SPDX-License-Identifier: BSD-2-Clause
"""Pieces of the randomised compliance regression (pcispy/sim/tests/bench_compliance.py) that
other system benches can reuse: a host bridge shared by several coroutines, byte
scoreboards, the board's scratch RAM backdoor, and seeded random settings of the board's
exerciser target.

Everything here runs inside cocotb on a started :class:`pcispy.sim.api.SimSystem`.
"""

from cocotb.triggers import Lock

from pcispy.pci.codes import DevselSpeed

__all__ = ["SharedInitiator", "Scoreboard", "ScratchBackdoor", "random_board_response",
           "board_devsel_speeds"]


def board_devsel_speeds(decode="medium"):
    """The DEVSEL# speeds (names, as ``pcispy target --devsel`` takes them) the board's
    exerciser answers with when its target decodes at ``decode``: that speed and every
    slower one (the target refuses to claim before its decode is done)."""
    names = [speed.name.lower() for speed in DevselSpeed]
    return tuple(names[names.index(decode):])


class SharedInitiator:
    """A behavioural initiator's driver that several cocotb coroutines may use at once.

    The driver's blocking operations (``mem_write``, ``mem_read``, ``io_*``,
    ``config_*``, ``run``) are taken one at a time under a lock: a coroutine's command is queued,
    run and collected before the next coroutine's, so the driver's buffer offsets and
    result order never mix. Everything else is passed through unchanged.

    Parameters:
        driver: the :class:`pcispy.sim.bfm.initiator_driver.InitiatorDriver` to share.
    """
    SERIALISED = ("mem_write", "mem_read", "io_write", "io_read", "config_write",
                  "config_read", "run")

    def __init__(self, driver):
        self.driver = driver
        self.lock = Lock()
        #: Commands completed through this wrapper.
        self.operations = 0

    def __getattr__(self, name):
        attribute = getattr(self.driver, name)
        if name not in self.SERIALISED:
            return attribute

        async def serialised(*args, **kwargs):
            async with self.lock:
                result = await attribute(*args, **kwargs)
            self.operations += 1
            return result
        return serialised


class Scoreboard:
    """The bytes a memory range must hold: every write is recorded, every read and the
    final memory contents are compared with it.

    Parameters:
        name: what the range is (in failure messages).
        base: address of byte 0.
        initial: the bytes the range holds at the start.
    """
    def __init__(self, name, base, initial):
        self.name = name
        self.base = base
        self.expected = bytearray(initial)

    def write(self, address, data):
        offset = address - self.base
        if offset < 0 or offset + len(data) > len(self.expected):
            raise ValueError(f"{self.name}: write [{address:#x}, +{len(data)}) outside the range")
        self.expected[offset:offset + len(data)] = data

    def read(self, address, size):
        offset = address - self.base
        return bytes(self.expected[offset:offset + size])

    def differences(self, actual, limit=4):
        """A description of the first ``limit`` differing bytes ('' when equal)."""
        if bytes(actual) == bytes(self.expected):
            return ""
        wrong = [i for i, (a, b) in enumerate(zip(actual, self.expected)) if a != b]
        shown = ", ".join(f"{self.base + i:#x}: {actual[i]:#04x} not {self.expected[i]:#04x}"
                          for i in wrong[:limit])
        return f"{self.name}: {len(wrong)} bytes differ ({shown})"


class ScratchBackdoor:
    """Direct access to the board's exerciser RAMs in the Verilator system: BAR2's scratch
    RAM (``board.scratch.ram.bd_storage``, words as wide as the bus) and BAR3's I/O RAM
    (``board.io_scratch.bd_storage``, 32-bit words). Byte offsets are RAM offsets (on a
    64-bit board BAR2's upper half aliases the lower one).

    Parameters:
        dut: the model's top-level cocotb handle.
        width: the bus width (32 or 64).
    """
    def __init__(self, dut, width):
        self.arrays = {2: (dut.board.scratch.ram.bd_storage, width // 8),
                       3: (dut.board.io_scratch.bd_storage, 4)}

    def read(self, bar, offset, size):
        array, word = self.arrays[bar]
        first, last = offset // word, (offset + size + word - 1) // word
        raw = b"".join(int(array[i].value).to_bytes(word, "little") for i in range(first, last))
        return raw[offset - first * word:offset - first * word + size]

    def write(self, bar, offset, data):
        """Whole words only (``offset`` and ``len(data)`` multiples of the word)."""
        array, word = self.arrays[bar]
        if offset % word or len(data) % word:
            raise ValueError(f"backdoor writes are whole {word}-byte words")
        for i in range(0, len(data), word):
            array[(offset + i) // word].value = int.from_bytes(data[i:i + word], "little")


def random_board_response(rng, *, width, abort=None, decode="medium"):
    """Seeded legal settings of the board's exerciser target (built with ``decode``
    speed), as keyword arguments of :func:`pcispy.exerciser.target_feature.target` (with
    ``reset=True``): DEVSEL# speed,
    initial wait, wait states, disconnects with or without data, retries, ACK64# (64-bit
    boards), and the target-abort range ``abort`` ((first, last) byte offsets or None).
    Every setting keeps the specification's latencies (16 initial, 8 subsequent)."""
    return {
        "reset": True,
        "devsel": rng.choice(board_devsel_speeds(decode)),
        "initial_wait": rng.choice((0, 0, 1, 3, 6, 8)),
        "wait": (wait := rng.choice((0, 0, 1, 2, 7))),
        "wait_every": rng.randrange(1, 9) if wait else None,
        "disconnect": rng.choice((0, 0, 1, 2, 5, 8)),
        "without_data": rng.random() < 0.5,
        "retry": rng.choice((0, 0, 1, 3)),
        "retry_every": rng.choice((0, 0, 2, 5)),
        "ack64": rng.random() < 0.7 if width == 64 else None,
        "abort": abort,
    }

