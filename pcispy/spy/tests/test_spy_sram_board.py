# SPDX-License-Identifier: BSD-2-Clause
"""The board with its spy on an external asynchronous SRAM: the trace-memory parameters
(and the combinations refused), BAR1's size from the SRAM's, and the SRAM pins as
pin-level ports of the converted design. The simulated system with the SRAM model:
pcispy/spy/tests/test_spy_system.py."""

import gc
import re

import pytest
from amaranth.back import verilog

from pcispy.spy.tracemem import SRAM_PINS, SRAMPads, sram_simulation_ports
from pcispy.board.top import PCIBoard

pytestmark = pytest.mark.spy


@pytest.mark.filterwarnings("ignore:.*created but never used")
@pytest.mark.parametrize("addr_bits, data_bits, slots", [(18, 32, 1 << 16), (16, 64, 1 << 15),
                                                         (12, 128, 1 << 12)])
def test_bar1_is_the_sram(addr_bits, data_bits, slots):
    board = PCIBoard(32, trace_memory="sram", sram_addr_bits=addr_bits,
                     sram_data_bits=data_bits)
    assert board.bars[1].size == 16 * slots and board.spy_addr_bits == slots.bit_length() - 1
    assert set(board.sram_ports) == set(SRAM_PINS)
    assert (len(board.sram_ports["a"]), len(board.sram_ports["d"])) == (addr_bits, data_bits)
    assert PCIBoard(32).bars[1].size == 16 << 12 and PCIBoard(32).sram_ports is None
    del board
    gc.collect()


@pytest.mark.filterwarnings("ignore:.*created but never used")
@pytest.mark.parametrize("arguments, message", [
    (dict(trace_memory="sram"), "needs sram_addr_bits"),
    (dict(trace_memory="sram", sram_addr_bits=2), r"needs sram_addr_bits \(more than 2"),
    (dict(trace_memory="sram", sram_addr_bits=18, spy_addr_bits=10), "not spy_addr_bits"),
    (dict(trace_memory="sram", sram_addr_bits=18, external_trace=True), "external_trace"),
    (dict(trace_memory="sram", sram_addr_bits=18, sram_data_bits=16), "32, 64 or 128"),
    (dict(sram_addr_bits=18), "for trace_memory='sram'"),
    (dict(trace_memory="flash"), "'bram' or 'sram', not 'flash'"),
])
def test_contradictions_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        PCIBoard(32, **arguments)
    gc.collect()


@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_sram_pads_check_their_ports():
    ports = sram_simulation_ports(10, 32)
    with pytest.raises(ValueError, match="SRAM ports missing: we_n"):
        SRAMPads({pin: port for pin, port in ports.items() if pin != "we_n"}, 10, 32)
    with pytest.raises(ValueError, match="port a is 10 bits wide, not 12"):
        SRAMPads(ports, 12, 32)
    gc.collect()


@pytest.mark.heavy
def test_sram_board_converts_with_sram_pins():
    board = PCIBoard(32, trace_memory="sram", sram_addr_bits=14, scratch_verilog=True)
    ports = []
    for port in board.ports.values():
        ports += [port.i, port.o, port.oe]
    for pin, port in board.sram_ports.items():
        ports += [port.o, port.oe] + ([port.i] if pin == "d" else [])
    text = verilog.convert(board, ports=ports, name="pcispy_board")
    header = text[text.index("module pcispy_board("):]
    header = header[:header.index(");")]
    declared = set(re.findall(r"\b(sram_\w+__(?:o|oe|i))\b", header))
    assert declared == {"sram_a__o", "sram_a__oe", "sram_d__o", "sram_d__oe", "sram_d__i",
                        "sram_ce_n__o", "sram_ce_n__oe", "sram_we_n__o", "sram_we_n__oe",
                        "sram_oe_n__o", "sram_oe_n__oe"}
    assert re.search(r"output \[13:0\] sram_a__o;", text)
    assert re.search(r"input \[31:0\] sram_d__i;", text)
