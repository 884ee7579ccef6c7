# SPDX-License-Identifier: BSD-2-Clause
"""One RAM for the board and the simulated system: lane-enabled writes, a synchronous or
asynchronous read, and storage Python can reach (the backdoor).

The exerciser's scratch RAM, the bus models' buffers and host memory, and the behavioural
asynchronous SRAM all keep their words in :func:`add_ram`. Amaranth's ``Memory`` is emitted
with one initialiser line per word, so a RAM of megabytes takes Verilator minutes to build;
with ``verilog=True`` the storage is the hand-written ``ram.v`` instead (pass
:data:`VERILOG_SOURCE` in the build's ``sources``). Either way the words are an array named
``bd_storage``: in a Verilator build ``<module path>.ram.bd_storage[word]``, under
Amaranth's simulator the ``Memory`` submodule ``bd_storage``. Yosys infers block RAM from
either.
"""

from dataclasses import dataclass
from pathlib import Path

from amaranth.hdl import ClockSignal, Instance, Signal
from amaranth.lib import memory

__all__ = ["RAMPorts", "add_ram", "VERILOG_SOURCE"]

#: The Verilog RAM used with ``verilog=True``.
VERILOG_SOURCE = Path(__file__).with_name("ram.v")


@dataclass
class RAMPorts:
    """The signals of a RAM added by :func:`add_ram`: write address, data and lane enables
    (the word's lanes written at the clock edge), read address and data."""
    w_addr: Signal
    w_data: Signal
    w_en: Signal
    r_addr: Signal
    r_data: Signal


def add_ram(m, *, width, addr_bits, lane_width=8, domain="sync", async_read=False,
            verilog=False, init=()):
    """Add a RAM of ``2**addr_bits`` words of ``width`` bits to module ``m``; return its
    :class:`RAMPorts`.

    Writes happen at the edge of ``domain`` in the lanes (``lane_width`` bits each; a lane
    as wide as the word gives one enable) whose ``w_en`` bit is set. ``r_data`` is the word
    at ``r_addr`` one clock later, or in the same clock with ``async_read``. ``init``
    (initial words) needs the Amaranth storage.
    """
    if width % lane_width:
        raise ValueError(f"a {width}-bit word has no {lane_width}-bit lanes")
    if verilog and init:
        raise ValueError("initial contents need the Amaranth storage (verilog=False)")
    lanes = width // lane_width
    ports = RAMPorts(w_addr=Signal(addr_bits), w_data=Signal(width), w_en=Signal(lanes),
                     r_addr=Signal(addr_bits), r_data=Signal(width))
    if verilog:
        m.submodules.ram = Instance(
            "pcispy_ram", p_WIDTH=width, p_ABITS=addr_bits, p_LANES=lanes,
            p_ASYNC_READ=int(async_read), i_clk=ClockSignal(domain),
            i_w_addr=ports.w_addr, i_w_data=ports.w_data, i_w_en=ports.w_en,
            i_r_addr=ports.r_addr, o_r_data=ports.r_data)
        return ports
    m.submodules.bd_storage = storage = memory.Memory(
        shape=width, depth=1 << addr_bits, init=list(init))
    write = storage.write_port(granularity=None if lanes == 1 else lane_width, domain=domain)
    read = storage.read_port(domain="comb" if async_read else domain)
    m.d.comb += [
        write.addr.eq(ports.w_addr), write.data.eq(ports.w_data), write.en.eq(ports.w_en),
        read.addr.eq(ports.r_addr), ports.r_data.eq(read.data),
    ]
    return ports
