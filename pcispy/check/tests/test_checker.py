# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the protocol checker: legal traffic of every kind is clean, and for every rule of
:data:`RULES` a waveform that breaks exactly that rule fires exactly that rule, once, at the
marked clock.

Waveforms are tables, one row per PCI clock. A row is a string of asserted lines plus
optional field values:

====== =======  ====== =======  ====== =======
letter line     letter line     letter line
====== =======  ====== =======  ====== =======
F      FRAME#   I      IRDY#    T      TRDY#
S      STOP#    D      DEVSEL#  P      PERR#
E      SERR#    L      LOCK#    R      RST#
Q      REQ64#   A      ACK64#   ``!``  the clock the rule must fire at
====== =======  ====== =======  ====== =======

``ad``, ``cbe``, ``ad_hi``, ``cbe_hi``, ``gnt`` and ``idsel`` keep their value until a row
changes them (as a bus keeps what was driven). PAR and PAR64 are computed correctly from the
previous row unless the row says ``par_flip=True`` / ``par64_flip=True``. A case built with
``devices`` (the checker's tracked IDSEL lines) also takes ``claim`` (which of them asserts
DEVSEL#, sticky too), one with ``target_visible`` takes ``target`` (the answering agent,
sticky).
"""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from pcispy.pci.bus import Command, parity
from pcispy.board.registers import REGISTER_MAP
from pcispy.check.checker import (COUNT_WIDTH, LATENCY_RULES, LOG_DEPTH, NO_MASTER, NO_TARGET,
                                  RULES, RULES_BY_NAME, ProtocolChecker)
from pcispy.tests import reusable_sim

pytestmark = pytest.mark.bfm

# Command codes, as driven on C/BE#[3:0] in the address phase.
IACK = Command.INTERRUPT_ACK.value
SPC = Command.SPECIAL_CYCLE.value
IOR = Command.IO_READ.value
IOW = Command.IO_WRITE.value
MR = Command.MEM_READ.value
MW = Command.MEM_WRITE.value
CFGR = Command.CONFIG_READ.value
CFGW = Command.CONFIG_WRITE.value
MRM = Command.MEM_READ_MULTIPLE.value
DAC = Command.DUAL_ADDRESS.value
MRL = Command.MEM_READ_LINE.value
MWI = Command.MEM_WRITE_INVALIDATE.value

LETTERS = {"F": "frame", "I": "irdy", "T": "trdy", "S": "stop", "D": "devsel",
           "P": "perr", "E": "serr", "L": "lock", "R": "rst", "Q": "req64", "A": "ack64"}
STICKY = ("ad", "cbe", "ad_hi", "cbe_hi", "gnt", "idsel", "claim", "target")
#: Inputs of the checker beside ``bus``.
SIDE_INPUTS = ("claim", "target")
WIDE_ONLY = {"req64", "ack64", "ad_hi", "cbe_hi", "par64"}


def r(lines="", **fields):
    """One clock of a waveform: asserted ``lines`` (letters) and field values."""
    return (lines, fields)


class Case:
    """A waveform and the checker configuration it runs on."""
    def __init__(self, *rows, width=64, masters=2, arbiter_visible=True, disable=(),
                 devices=(), master_devices=None, target_visible=False):
        self.rows = [row if isinstance(row, tuple) else (row, {}) for row in rows]
        self.width = width
        self.masters = masters
        self.arbiter_visible = arbiter_visible
        self.disable = disable
        self.devices = devices
        self.master_devices = master_devices
        self.target_visible = target_visible

    @property
    def marked(self):
        return [i for i, (lines, _) in enumerate(self.rows) if "!" in lines]

    def bus_values(self, width):
        """The full bus value of every clock, as ``[{field: value}]`` (``claim`` and
        ``target``, the checker's other inputs, among them)."""
        sticky = {"ad": 0, "cbe": 0, "ad_hi": 0, "cbe_hi": 0, "gnt": 1, "idsel": 0,
                  "claim": 0, "target": NO_TARGET}
        prev = dict(sticky)
        clocks = []
        for lines, fields in self.rows:
            unknown = set(lines) - set(LETTERS) - {"!"}
            assert not unknown, f"unknown letters {unknown}"
            sticky.update({k: v for k, v in fields.items() if k in STICKY})
            value = {name: 0 for name in LETTERS.values()}
            value.update({LETTERS[c]: 1 for c in lines if c in LETTERS})
            value.update(sticky)
            value["par"] = parity(prev["ad"], prev["cbe"]) ^ fields.get("par_flip", 0)
            value["par64"] = (parity(prev["ad_hi"], prev["cbe_hi"]) ^
                              fields.get("par64_flip", 0))
            prev = dict(sticky)
            if width == 32:
                assert not (value["req64"] or value["ack64"] or fields.get("par64_flip")), \
                    "64-bit lines on a 32-bit bus"
                value = {k: v for k, v in value.items() if k not in WIDE_ONLY}
            clocks.append(value)
        return clocks


def simulate(case, *, width=None, masters=None, arbiter_visible=None, count_width=16,
             clear_at=None, read_log=False):
    """Run ``case`` through a checker of its configuration, from reset; return what it
    reported. (The cases of one configuration share one simulator, reset between them.)

    Returns a dict: ``pulses`` (violation vector per clock), ``flags``, ``any``,
    ``first_rule``, ``first_cycle``, ``counts`` (per rule id); with ``read_log`` also
    ``log_entries`` and ``log``: ``(cycle, rules, master)`` of every log index (and
    ``target`` last, for a case with ``target_visible``).
    """
    width = case.width if width is None else width
    masters = case.masters if masters is None else masters
    arbiter_visible = case.arbiter_visible if arbiter_visible is None else arbiter_visible
    master_devices = case.master_devices
    key = ("checker", width, masters, arbiter_visible, count_width, tuple(case.devices),
           None if master_devices is None else tuple(sorted(master_devices.items())),
           case.target_visible)

    def build():
        dut = ProtocolChecker(width, masters, arbiter_visible=arbiter_visible,
                              count_width=count_width, devices=case.devices,
                              master_devices=master_devices,
                              target_visible=case.target_visible)
        return dut, dut
    simulation = reusable_sim.shared(key, build, {"sync": 1e-6})
    dut = simulation.handles
    clocks = case.bus_values(width)
    enable = (1 << len(RULES)) - 1
    for name in case.disable:
        enable &= ~(1 << RULES_BY_NAME[name].id)
    out = {}

    async def bench(ctx):
        ctx.set(dut.rule_enable, enable)
        pulses = []
        for index, value in enumerate(clocks):
            for name, v in value.items():
                if name not in SIDE_INPUTS:
                    ctx.set(getattr(dut.bus, name), v)
                elif name in dut.signature.members:
                    ctx.set(getattr(dut, name), v)
            ctx.set(dut.clear, index == clear_at)
            pulses.append(ctx.get(dut.violation))
            await ctx.tick()
        ctx.set(dut.clear, 0)
        out["pulses"] = pulses
        out["flags"] = ctx.get(dut.flags)
        out["any"] = ctx.get(dut.any)
        out["first_rule"] = ctx.get(dut.first_rule)
        out["first_cycle"] = ctx.get(dut.first_cycle)
        counts = []
        for rule in RULES:
            ctx.set(dut.count_index, rule.id)
            await ctx.tick()
            counts.append(ctx.get(dut.count))
        out["counts"] = counts
        if read_log:
            out["log_entries"] = ctx.get(dut.log_entries)
            log = []
            for index in range(LOG_DEPTH):
                ctx.set(dut.log_index, index)
                await ctx.tick()
                entry = (ctx.get(dut.log_cycle), ctx.get(dut.log_rules),
                         ctx.get(dut.log_master))
                if case.target_visible:
                    entry += (ctx.get(dut.log_target),)
                log.append(entry)
            out["log"] = log
        assert ctx.get(dut.violation) == 0, "the idle bus at the end must be clean"

    simulation.run(bench)
    return out


def fired(pulses):
    """``[(clock, rule name)]`` of every pulse."""
    return [(clock, rule.name) for clock, vector in enumerate(pulses)
            for rule in RULES if vector >> rule.id & 1]


# --- legal traffic -------------------------------------------------------------------

LEGAL = {
    "write_single_fast": Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=0xCAFEF00D, cbe=0), "", ""),
    "read_single_medium": Case(
        "", r("F", ad=0x2000, cbe=MR), r("I", cbe=0), "ID", r("IDT", ad=0x11223344), ""),
    "write_burst_waits": Case(
        "", r("F", ad=0x3000, cbe=MW), r("FI", ad=0xD0, cbe=0), "FID", "FIDT",
        r("FDT", ad=0xD1), "FIDT", r("FID", ad=0xD2, cbe=0b1100), "FIDT",
        r("IDT", ad=0xD3, cbe=0), ""),
    "read_burst_waits": Case(
        "", r("F", ad=0x4000, cbe=MRL), r("FI", cbe=0), "FID", r("FIDT", ad=0xA0),
        r("FDT", ad=0xA1), "FDT", "FIDT", r("FID", cbe=0b0011), r("FIDT", ad=0xA2),
        r("IDT", ad=0xA3), ""),
    "retry_single": Case(
        "", r("F", ad=0x5000, cbe=MR), r("I", cbe=0), "IDS", ""),
    "retry_burst": Case(
        "", r("F", ad=0x5000, cbe=MW), r("FI", cbe=0, ad=7), "FI", "FIDS", "IDS", ""),
    "disconnect_with_data": Case(
        "", r("F", ad=0x6000, cbe=MW), r("FI", ad=1, cbe=0), "FIDT", r("FIDTS", ad=2),
        r("IDS", ad=3), ""),
    "disconnect_without_data": Case(
        "", r("F", ad=0x6000, cbe=MRM), r("FI", cbe=0), "FID", r("FIDT", ad=5),
        r("FIDT", ad=6), "FIDS", "IDS", ""),
    "target_abort_after_data": Case(
        "", r("F", ad=0x7000, cbe=MW), r("FI", ad=1, cbe=0), "FIDT", r("FIS", ad=2),
        "IS", ""),
    "target_abort_first_phase": Case(
        "", r("F", ad=0x7000, cbe=MR), r("I", cbe=0), "ID", "IS", ""),
    "master_abort_single": Case(
        "", r("F", ad=0xDEAD0000, cbe=MR), r("I", cbe=0), "I", "I", "I", "", ""),
    "master_abort_burst": Case(
        "", r("F", ad=0xDEAD0000, cbe=MW), r("FI", ad=1, cbe=0), "FI", "FI", "FI", "I",
        "", ""),
    "special_cycle": Case(
        "", r("F", ad=0, cbe=SPC), r("I", ad=0x00020001, cbe=0), "I", "I", "I", "", ""),
    "interrupt_acknowledge": Case(
        "", r("F", ad=0, cbe=IACK), r("I", cbe=0b1110), "ID", r("IDT", ad=0x21), ""),
    "write64_burst": Case(
        "", r("FQ", ad=0x8000, cbe=MW), r("FQI", ad=0x10, ad_hi=0x11, cbe=0, cbe_hi=0),
        "FQIDAT", r("FQIDAT", ad=0x20, ad_hi=0x21), r("IDAT", ad=0x30, ad_hi=0x31), ""),
    "read64_burst_waits": Case(
        "", r("FQ", ad=0x8000, cbe=MRM), r("FQI", cbe=0, cbe_hi=0), "FQIDA",
        r("FQIDAT", ad=1, ad_hi=2), r("FQDAT", ad=3, ad_hi=4), "FQIDAT",
        r("IDAT", ad=5, ad_hi=6), ""),
    "read64_to_32bit_target": Case(
        "", r("FQ", ad=0x8000, cbe=MR), r("FQI", cbe=0, cbe_hi=0), "FQID",
        r("FQIDT", ad=9), r("IDT", ad=10), ""),
    "config_read_type0": Case(
        "", r("F", ad=0x0000_0804, cbe=CFGR, idsel=1), r("I", cbe=0, idsel=0), "ID",
        r("IDT", ad=0x12345678), ""),
    "config_write_type1": Case(
        "", r("F", ad=0x0001_0805, cbe=CFGW), r("I", ad=0xFFFFFFFF, cbe=0), "ID", "IDT",
        ""),
    "io_read_byte_0x71": Case(
        "", r("F", ad=0x71, cbe=IOR), r("I", cbe=0b1101), "ID", r("IDT", ad=0x5500), ""),
    "io_write_word_0x72": Case(
        "", r("F", ad=0x72, cbe=IOW), r("I", ad=0xBEEF0000, cbe=0b0011), "ID", "IDT", ""),
    "io_no_byte_enables": Case(
        "", r("F", ad=0x73, cbe=IOW), r("IDT", ad=0, cbe=0b1111), ""),
    "dac_read": Case(
        "", r("F", ad=0x0000_1000, cbe=DAC), r("F", ad=0x0000_0001, cbe=MR),
        r("I", cbe=0), "ID", r("IDT", ad=0x77), ""),
    "dac_master_abort": Case(
        "", r("F", ad=0x0000_1000, cbe=DAC), r("F", ad=0x0000_0001, cbe=MW),
        r("I", ad=5, cbe=0), "I", "I", "I", "", ""),
    "fast_back_to_back": Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), r("F", ad=0x2000, cbe=MW),
        r("IDT", ad=2, cbe=0), ""),
    "mwi_cache_line_wrap": Case(
        "", r("F", ad=0x1008, cbe=MWI), r("FI", ad=1, cbe=0), "FIDT", r("FIDT", ad=2),
        r("FIDT", ad=3), r("IDT", ad=4), ""),
    "reserved_burst_order_disconnected": Case(
        "", r("F", ad=0x1001, cbe=MR), r("FI", cbe=0), "FID", r("FIDTS", ad=1), "IDS",
        ""),
    "reset_with_req64": Case(
        "RQ", "RQ", "R", "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), ""),
    "gnt_handover_busy_and_idle": Case(
        r("", gnt=0b01), r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0, gnt=0b10),
        "FIDT", r("IDT", ad=2), r("", gnt=0), r("", gnt=0b10), r("F", ad=0x2000, cbe=MR),
        r("I", cbe=0, gnt=0), "ID", "IDT", ""),
    "parity_error_reported": Case(   # exactly the parity rule; PERR# itself is correct
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=0x0F, cbe=0), r("!", par_flip=True),
        "P", ""),
    "latency_initiator_8": Case(    # IRDY# on the 8th clock after the address phase: legal
        "", r("F", ad=0x1000, cbe=MW), "F", *["FD"] * 6, r("IDT", ad=1, cbe=0), ""),
    "latency_target_16": Case(      # TRDY# 16 clocks after the address phase: legal
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), *["ID"] * 14, r("IDT", ad=3), ""),
    "latency_subsequent_8": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", cbe=0), "FIDT", *["FID"] * 7, "FIDT", "IDT", ""),
    "dac_above_4g_64bit": Case(    # AD[31:0] of the second phase holds the upper half
        "", r("FQ", ad=0x1000, ad_hi=0x2, cbe=DAC, cbe_hi=MR), r("FQ", ad=0x2, cbe=MR),
        r("FQI", cbe=0, cbe_hi=0), "FQIDA", r("FQIDAT", ad=5, ad_hi=6),
        r("IDAT", ad=7, ad_hi=8), ""),
    "disconnect_frame_dropped_after_stop": Case(   # FRAME# goes the clock after STOP#
        "", r("F", ad=0x6000, cbe=MW), r("FI", ad=1, cbe=0), "FIDS", "IDS", ""),
    "parked_bus_driven_at_clock_9": Case(   # the latest the parked agent may drive AD
        r("", gnt=0), *[r("", gnt=1, ad=0xFFFF_FFFF, cbe=0xF, par_flip=True)] * 8,
        r("", ad=0, cbe=0, par_flip=True), *[""] * 12),
}


def _expected_legal(case):
    return [(i, "write_data_parity") for i in case.marked]


@pytest.mark.parametrize("name", sorted(LEGAL))
def test_legal_traffic_is_clean(name):
    case = LEGAL[name]
    out = simulate(case)
    assert fired(out["pulses"]) == _expected_legal(case)
    assert out["any"] == bool(case.marked)


@pytest.mark.parametrize("name", sorted(n for n, c in LEGAL.items()
                                        if not any(ch in l for l, _ in c.rows for ch in "QA")))
def test_legal_traffic_is_clean_on_32bit_slot(name):
    """A board in a 32-bit slot: no 64-bit lines, its own GNT# only."""
    case = LEGAL[name]
    out = simulate(case, width=32, masters=1, arbiter_visible=False)
    assert fired(out["pulses"]) == _expected_legal(case)


# --- one waveform per rule, breaking exactly that rule ------------------------------

VIOLATIONS = {
    "frame_without_irdy": Case(
        "", r("F", ad=0x1000, cbe=MW), "F", "!", ""),
    "irdy_without_frame": Case(
        "", "I!", ""),
    "irdy_in_address_phase": Case(
        "", r("FI!", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), ""),
    "frame_reasserted": Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=1, cbe=0), "ID", "FID!", "FIDT", "IDT", ""),
    "frame_dropped_in_wait": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FID", "ID!", "IDT", ""),
    "irdy_withdrawn": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FID", "FD!", "FIDT", "IDT", ""),
    "master_abort_early": Case(
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), "I", "I", "!", ""),
    "devsel_while_idle": Case(
        "", "D!", ""),
    "devsel_late": Case(
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), "I", "I", "I", "ID!", r("IDT", ad=4),
        ""),
    "devsel_dropped": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FID", "FI!", "FIS", "IS", ""),
    "devsel_on_special_cycle": Case(
        "", r("F", ad=0, cbe=SPC), r("I", ad=0x1234, cbe=0), "IDT!", ""),
    "trdy_without_devsel": Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=1, cbe=0), "IT!", ""),
    "stop_without_claim": Case(
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), "IS!", ""),
    "stop_released_early": Case(
        "", r("F", ad=0x1000, cbe=MR), r("FI", cbe=0), "FIDS", "ID!", "IDS", ""),
    "stop_withdrawn": Case(
        "", r("F", ad=0x1000, cbe=MW), r("F", ad=1, cbe=0), "FDS", "FD!", "FIDT", "IDT",
        ""),
    "trdy_withdrawn": Case(
        "", r("F", ad=0x1000, cbe=MW), r("F", ad=1, cbe=0), "FDT", "FD!", "FIDT", "IDT",
        ""),
    "target_response_changed": Case(
        "", r("F", ad=0x1000, cbe=MW), r("F", ad=1, cbe=0), "FDT", "FDTS!", "FIDTS", "IDS",
        ""),
    "trdy_in_read_turnaround": Case(
        "", r("F", ad=0x1000, cbe=MR), r("IDT!", ad=5, cbe=0), ""),
    "data_after_stop": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FIDTS", r("IDTS!", ad=2), ""),
    "initiator_latency": Case(
        "", r("F", ad=0x1000, cbe=MW), "F", *["FD"] * 6, "FD!", r("IDT", ad=1, cbe=0), ""),
    "target_initial_latency": Case(
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), *["ID"] * 14, "ID!", r("IDT", ad=3),
        ""),
    "target_initial_latency_bridge": Case(
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), *["ID"] * 30, "ID!", r("IDT", ad=3),
        "", disable=("target_initial_latency",)),
    "target_subsequent_latency": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FIDT", *["FID"] * 7, "FID!",
        "FIDT", "IDT", ""),
    "reserved_command": Case(
        "", r("F!", ad=0x1000, cbe=0b1000), r("I", cbe=0), "I", "I", "I", "", ""),
    "dac_after_dac": Case(
        "", r("F", ad=0x1000, cbe=DAC), r("F!", ad=0x1, cbe=DAC), r("I", cbe=0), "I", "I",
        "I", "", ""),
    "config_reserved_type": Case(
        "", r("F!", ad=0x0000_0806, cbe=CFGR), r("I", cbe=0), "I", "I", "I", "", ""),
    "io_byte_enables_mismatch": Case(
        "", r("F", ad=0x71, cbe=IOW), r("IDT!", ad=0x12, cbe=0b1110), ""),
    "mwi_byte_enables": Case(
        "", r("F", ad=0x1000, cbe=MWI), r("IDT!", ad=1, cbe=0b0001), ""),
    "reserved_burst_order_continued": Case(
        "", r("F", ad=0x1001, cbe=MR), r("FI", cbe=0), r("FIDT", ad=1), r("IDT!", ad=2), ""),
    "byte_enables_changed_in_wait": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), r("FID!", cbe=0b0001), "FIDT",
        "IDT", ""),
    "write_data_changed_in_wait": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), r("FID!", ad=2), "FIDT", "IDT",
        ""),
    "read_data_changed_in_wait": Case(
        "", r("F", ad=0x1000, cbe=MR), r("F", cbe=0), r("FDT", ad=1), r("FDT!", ad=2),
        "FIDT", r("IDT", ad=3), ""),
    "address_parity": Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT!", ad=1, cbe=0, par_flip=True), ""),
    "write_data_parity": Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), r("!", par_flip=True), ""),
    "read_data_parity": Case(
        "", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), r("IDT", ad=1), r("!", par_flip=True),
        ""),
    "data_parity64": Case(
        "", r("FQ", ad=0x1000, cbe=MW), r("IDAT", ad=1, ad_hi=2, cbe=0, cbe_hi=0),
        r("!", par64_flip=True), ""),
    "perr_timing": Case(
        "", "P!", ""),
    "perr_without_parity_error": Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), "", "P!", ""),
    "frame_without_gnt": Case(
        r("", gnt=0), r("F!", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), ""),
    "multiple_gnt": Case(
        r("", gnt=0b01), r("!", gnt=0b11), r("", gnt=0b01)),
    "gnt_switch_while_idle": Case(
        r("", gnt=0b01), r("!", gnt=0b10), ""),
    "req64_frame_mismatch": Case(
        "", "Q!", ""),
    "req64_non_memory": Case(
        "", r("FQ!", ad=0x70, cbe=IOR), r("I", cbe=0b1110), "ID", r("IDT", ad=0x33), ""),
    "ack64_without_req64": Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDAT!", ad=1, cbe=0), ""),
    "ack64_devsel_mismatch": Case(
        "", r("FQ", ad=0x1000, cbe=MW), r("I", ad=1, ad_hi=2, cbe=0, cbe_hi=0), "ID",
        "IDA!", "IDAT", ""),
    "signals_during_reset": Case(
        "R", "RF!", "R", "", ""),
    # A fast back-to-back start by a master other than the one whose transaction just
    # completed (GNT# moved to master 1 during master 0's transaction).
    "busy_bus_start": Case(
        r("", gnt=0b01), r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0, gnt=0b10),
        r("F!", ad=0x2000, cbe=MW), r("IDT", ad=2, cbe=0), ""),
    "frame_held_after_stop": Case(
        "", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FIDS", "FIDS!", "IDS", ""),
    # The target waits on a write, asserts PERR# early for the master's bad data, and lets
    # it go at completion + 2 (clock 7) instead of after it (completion at 5). The data
    # moved with bad parity: write_data_parity would fire too.
    "perr_released_early": Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=0xBAD, cbe=0), r("ID", par_flip=True),
        r("IDP", par_flip=True), r("IDTP", par_flip=True), r("P", par_flip=True), "!", "",
        disable=("write_data_parity",)),
    # Device 0 (IDSEL AD[16]) gets Parity Error Response; a memory write it claims moves
    # data with bad parity (write_data_parity, clock 6) and no PERR# follows at clock 7.
    "perr_not_reported": Case(
        "", r("F", ad=0x0001_0004, cbe=CFGW), r("IDT", ad=0x0040, cbe=0), "",
        r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, claim=1), r("", par_flip=True, claim=0),
        "!", "", devices=(16,), disable=("write_data_parity",)),
    # Device 0 gets Parity Error Response and SERR# Enable; a memory write's address phase
    # (clock 4) has bad parity (address_parity, clock 5); no SERR# in clocks 6 to 8.
    "serr_not_reported": Case(
        "", r("F", ad=0x0001_0004, cbe=CFGW), r("IDT", ad=0x0140, cbe=0), "",
        r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0, par_flip=True), "", "", "!", "",
        devices=(16,), disable=("address_parity",)),
    "dac_below_4g": Case(
        "", r("F", ad=0x1000, cbe=DAC), r("F!", ad=0, cbe=MR), r("I", cbe=0), "ID",
        r("IDT", ad=0x77), ""),
    # Idle with master 0's GNT# for ten clocks, nobody driving: AD and C/BE# pulled up,
    # PAR 1 (wrong parity over 36 ones); the 10th clock fires, then GNT# goes.
    "parked_bus_parity": Case(
        r("", gnt=0), *[r("", gnt=1, ad=0xFFFF_FFFF, cbe=0xF, par_flip=True)] * 9,
        r("!", par_flip=True), r("", gnt=0), ""),
}


@pytest.mark.parametrize("rule", RULES, ids=[rule.name for rule in RULES])
def test_rule_fires_alone(rule):
    case = VIOLATIONS[rule.name]  # a rule without a waveform fails here
    (clock,) = case.marked
    out = simulate(case)
    assert fired(out["pulses"]) == [(clock, rule.name)]
    assert out["flags"] == 1 << rule.id
    assert out["any"] == 1
    assert out["first_rule"] == rule.id
    assert out["first_cycle"] == clock
    assert out["counts"] == [int(other is rule) for other in RULES]


@pytest.mark.parametrize("name", ["irdy_withdrawn", "address_parity", "devsel_late",
                                  "signals_during_reset"])
def test_disabled_rule_is_silent(name):
    base = VIOLATIONS[name]
    case = Case(*base.rows, disable=base.disable + (name,))
    out = simulate(case)
    assert fired(out["pulses"]) == []
    assert (out["flags"], out["any"], out["counts"]) == (0, 0, [0] * len(RULES))


def test_rules_are_data():
    assert len(RULES) >= 40
    assert [rule.id for rule in RULES] == list(range(len(RULES)))
    assert len(RULES_BY_NAME) == len(RULES)
    for rule in RULES:
        assert rule.name.isidentifier() and rule.name == rule.name.lower()
        assert rule.description.endswith(".") and rule.description[0].isupper()
        assert "§" in rule.reference and "notes:" not in rule.reference
    assert set(LATENCY_RULES) <= set(RULES_BY_NAME)


def test_register_block_matches_rules():
    _, enable_hi = REGISTER_MAP["check.enable_hi"]
    _, flags_hi = REGISTER_MAP["check.flags_hi"]
    _, status = REGISTER_MAP["check.status"]
    _, count = REGISTER_MAP["check.count"]
    _, index = REGISTER_MAP["check.count_index"]
    assert 32 + enable_hi.field("enable").width == len(RULES)
    assert 32 + flags_hi.field("flags").width == len(RULES)
    assert enable_hi.reset == (1 << (len(RULES) - 32)) - 1
    assert status.field("rules").reset == len(RULES)
    assert status.field("first_rule").values == {r.id: r.name for r in RULES}
    assert count.field("count").width == COUNT_WIDTH
    assert (1 << index.field("index").width) >= len(RULES) > 1 << (index.field("index").width - 1)
    _, log_index = REGISTER_MAP["check.log_index"]
    _, log_rules_hi = REGISTER_MAP["check.log_rules_hi"]
    _, log_info = REGISTER_MAP["check.log_info"]
    assert 1 << log_index.field("index").width == LOG_DEPTH
    assert 32 + log_rules_hi.field("rules").width == len(RULES)
    assert (1 << log_info.field("entries").width) > LOG_DEPTH
    assert (log_info.field("master").width, log_info.field("master").reset) == (3, NO_MASTER)


def test_legacy_device_breaks_latency_rules_only():
    """A PC real-time clock behind an ISA bridge: subtractive DEVSEL#, data at clock 40."""
    rows = ["", r("F", ad=0x71, cbe=IOR), r("I", cbe=0b1101), "I", "I",
            *["ID"] * 35, r("IDT", ad=0x1200), ""]
    out = simulate(Case(*rows))
    tgt16, tgt32 = (RULES_BY_NAME[n] for n in ("target_initial_latency",
                                                "target_initial_latency_bridge"))
    assert fired(out["pulses"]) == [(17, tgt16.name), (33, tgt32.name)]
    assert out["first_rule"] == tgt16.id and out["first_cycle"] == 17
    masked = simulate(Case(*rows, disable=LATENCY_RULES))
    assert fired(masked["pulses"]) == [] and masked["any"] == 0


def test_lowest_rule_id_wins_first_record():
    """TRDY# and STOP# on an idle bus in one clock: two rules, the lower id is first."""
    out = simulate(Case("", "", "TS", ""))
    names = {"trdy_without_devsel", "stop_without_claim"}
    assert fired(out["pulses"]) == [(2, n) for n in sorted(names, key=lambda n:
                                                            RULES_BY_NAME[n].id)]
    assert out["first_rule"] == min(RULES_BY_NAME[n].id for n in names)
    assert out["first_cycle"] == 2


def test_counters_saturate_and_clear():
    rule = RULES_BY_NAME["devsel_while_idle"]
    out = simulate(Case("", "D", "D", "D", "D", "D", ""), count_width=2)
    assert out["counts"][rule.id] == 3
    assert out["first_cycle"] == 1
    # clear in the clock of the 4th pulse: it wins, then the 5th counts afresh
    out = simulate(Case("", "D", "D", "D", "D", "D", ""), count_width=2, clear_at=4)
    assert out["counts"][rule.id] == 1
    assert out["first_cycle"] == 5 and out["flags"] == 1 << rule.id


def test_count_index_out_of_range_is_refused():
    dut = ProtocolChecker()
    seen = {}

    async def bench(ctx):
        ctx.set(dut.bus.devsel, 1)
        await ctx.tick()
        ctx.set(dut.bus.devsel, 0)
        await ctx.tick()        # the counter takes the violation in the clock after it
        for index in (RULES_BY_NAME["devsel_while_idle"].id, len(RULES), 63):
            ctx.set(dut.count_index, index)
            seen[index] = (ctx.get(dut.count_index_error), None)
            await ctx.tick()
            seen[index] = (seen[index][0], ctx.get(dut.count))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == {RULES_BY_NAME["devsel_while_idle"].id: (0, 1),
                    len(RULES): (1, 0), 63: (1, 0)}


def test_bad_parameters_are_refused():
    with warnings.catch_warnings():
        # the refused objects are never elaborated; collect them inside this block
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="width"):
            ProtocolChecker(48)
        with pytest.raises(ValueError, match="masters"):
            ProtocolChecker(32, 0)
        with pytest.raises(ValueError, match="count_width"):
            ProtocolChecker(32, 1, count_width=0)
        with pytest.raises(ValueError, match="devices must be distinct IDSEL lines"):
            ProtocolChecker(32, 1, devices=(8,))
        with pytest.raises(ValueError, match="master_devices must map"):
            ProtocolChecker(32, 2, devices=(16,), master_devices={1: 1})
        gc.collect()


# --- PERR# timing: early while a phase waits, held to completion + 2 ----------------

def _bits(*names):
    return sum(1 << RULES_BY_NAME[name].id for name in names)


#: name -> (waveform, [(clock, rule)] it must fire). The data phase of the write cases
#: completes at clock 5 (its data valid from clock 2), of the read case at clock 6 (valid
#: from 4); bad data that moves also breaks the data parity rule, the clock after.
PERR_CASES = {
    "write_early_held_to_completion_plus_2": (Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=0xBAD, cbe=0), r("ID", par_flip=True),
        r("IDP", par_flip=True), r("IDTP", par_flip=True), r("P", par_flip=True), "P", ""),
        [(6, "write_data_parity")]),
    "read_early_while_master_waits": (Case(
        "", r("F", ad=0x2000, cbe=MR), r("F", cbe=0), "FD", r("FDT", ad=0xBAD),
        r("FDT", par_flip=True), r("IDTP", par_flip=True), r("P", par_flip=True), "P", ""),
        [(7, "read_data_parity")]),
    "write_at_completion_plus_2_only": (Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=0xBAD, cbe=0), r("ID", par_flip=True),
        r("ID", par_flip=True), r("IDT", par_flip=True), r("", par_flip=True), "P", ""),
        [(6, "write_data_parity")]),
    "early_released_at_completion_plus_1": (Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=0xBAD, cbe=0), r("ID", par_flip=True),
        r("IDP", par_flip=True), r("IDTP", par_flip=True), r("", par_flip=True), "", ""),
        [(6, "write_data_parity"), (6, "perr_released_early")]),
    "early_for_correct_parity": (Case(
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=0x600D, cbe=0), "ID", "IDP", "IDTP", "P",
        "P", ""),
        [(c, "perr_without_parity_error") for c in (4, 5, 6, 7)]),
    "before_par_is_valid": (Case(   # data valid at 2, PAR at 3: PERR# at 3 is too early
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=1, cbe=0), "IDP", "IDT", ""),
        [(3, "perr_timing")]),
    "address_phase_plus_2": (Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), "P", ""),
        [(3, "perr_timing")]),
    "held_past_completion_plus_2": (Case(
        "", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), r("", par_flip=True), "P",
        "P", ""),
        [(3, "write_data_parity"), (5, "perr_timing")]),
    "retry_after_waits_reported_early": (Case(   # data valid on AD though none moved
        "", r("F", ad=0x1000, cbe=MW), r("I", ad=0xBAD, cbe=0), r("ID", par_flip=True),
        r("IDP", par_flip=True), r("IDSP", par_flip=True), r("P", par_flip=True), "P", ""),
        []),
}


@pytest.mark.parametrize("name", sorted(PERR_CASES))
def test_perr_timing(name):
    case, expected = PERR_CASES[name]
    assert fired(simulate(case)["pulses"]) == expected


# --- PERR# and SERR# as the Command register asks ----------------------------------

def _command_write(value, device_bit=16, function=0, cbe=0):
    """Rows of a type 0 configuration write of ``value`` into the Command register of
    ``function`` of the device whose IDSEL is AD[device_bit] (fast DEVSEL#), then idle."""
    return [r("F", ad=1 << device_bit | function << 8 | 1 << 2, cbe=CFGW),
            r("IDT", ad=value, cbe=cbe), ""]


def _bad_write(claim=1):
    """A memory write with bad data parity (data moves at its clock 1), claimed by the
    devices ``claim`` shows, then two idle clocks; PERR# as the case adds it."""
    return [r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0, claim=claim),
            r("", par_flip=True, claim=0)]


#: name -> (waveform, [(clock, rule)] it must fire). Device 0 is IDSEL AD[16], device 1
#: AD[17]; master 1 is device 0. Bad data breaks the data parity rule the clock after it
#: moved, bad address parity the address rule.
REPORTING_CASES = {
    "perr_in_time": (Case(
        "", *_command_write(0x0040), *_bad_write(), "P", "", devices=(16,)),
        [(6, "write_data_parity")]),
    "perr_early_and_held": (Case(   # the target waits; PERR# from clock 7 to 9 (done at 7)
        "", *_command_write(0x0040), r("F", ad=0x1000, cbe=MW), r("I", ad=1, cbe=0),
        r("ID", claim=1, par_flip=True), r("IDTP", par_flip=True), r("P", par_flip=True,
                                                                       claim=0), "P", "",
        devices=(16,)),
        [(8, "write_data_parity")]),
    "parity_response_off": (Case(
        "", *_command_write(0x0100), *_bad_write(), "", "", devices=(16,)),
        [(6, "write_data_parity")]),
    "claimed_by_a_device_not_configured": (Case(
        "", *_command_write(0x0040), *_bad_write(claim=0b10), "", "", devices=(16, 17)),
        [(6, "write_data_parity")]),
    "read_back_clears_parity_response": (Case(   # the device hard-wires bit 6 to 0
        "", *_command_write(0x0040), r("F", ad=0x0001_0004, cbe=CFGR), r("I", cbe=0),
        r("IDT", ad=0x0200_0000), "", *_bad_write(), "", "", devices=(16,)),
        [(10, "write_data_parity")]),
    "byte_enables_keep_parity_response": (Case(  # byte 0 off: bit 6 keeps its value
        "", *_command_write(0x0040), *_command_write(0x0100, cbe=0b0001), *_bad_write(),
        "!", "", devices=(16,)),
        [(9, "write_data_parity"), (10, "perr_not_reported")]),
    "reset_clears_parity_response": (Case(
        "", *_command_write(0x0040), "R", "R", "", *_bad_write(), "", "", devices=(16,)),
        [(9, "write_data_parity")]),
    "configuration_write_to_the_function": (Case(  # Interrupt Line of function 0 itself
        "", *_command_write(0x0040), r("F", ad=0x0001_003C, cbe=CFGW),
        r("IDT", ad=0x0B, cbe=0b1110), r("", par_flip=True), "!", "", devices=(16,)),
        [(6, "write_data_parity"), (7, "perr_not_reported")]),
    "configuration_write_to_another_function": (Case(  # function 1: never configured
        "", *_command_write(0x0040), r("F", ad=0x0001_013C, cbe=CFGW),
        r("IDT", ad=0x0B, cbe=0b1110), r("", par_flip=True), "", "", devices=(16,)),
        [(6, "write_data_parity")]),
    "multi_function_claim_needs_every_function": (Case(
        "", *_command_write(0x0040), *_command_write(0x0000, function=1), *_bad_write(),
        "", "", devices=(16,)),
        [(9, "write_data_parity")]),
    "master_of_a_read_reports": (Case(   # master 1 (device 0) reads bad data, silent
        r("", gnt=0b01), *_command_write(0x0040), r("", gnt=0), r("", gnt=0b10),
        r("F", ad=0x2000, cbe=MR), r("I", cbe=0), "ID", r("IDT", ad=0xBAD),
        r("", par_flip=True), "!", "", devices=(16,), master_devices={1: 0}),
        [(10, "read_data_parity"), (11, "perr_not_reported")]),
    "serr_two_clocks_after_the_address": (Case(
        "", *_command_write(0x0140), r("F", ad=0x1000, cbe=MW),
        r("IDT", ad=1, cbe=0, par_flip=True), "E", "", "", devices=(16,)),
        [(5, "address_parity")]),
    "serr_last_clock_of_the_window": (Case(
        "", *_command_write(0x0140), r("F", ad=0x1000, cbe=MW),
        r("IDT", ad=1, cbe=0, par_flip=True), "", "", "E", "", devices=(16,)),
        [(5, "address_parity")]),
    "serr_too_late": (Case(
        "", *_command_write(0x0140), r("F", ad=0x1000, cbe=MW),
        r("IDT", ad=1, cbe=0, par_flip=True), "", "", "!", "E", "", devices=(16,)),
        [(5, "address_parity"), (8, "serr_not_reported")]),
    "serr_needs_parity_response_too": (Case(
        "", *_command_write(0x0100), r("F", ad=0x1000, cbe=MW),
        r("IDT", ad=1, cbe=0, par_flip=True), "", "", "", "", devices=(16,)),
        [(5, "address_parity")]),
    # a corrupted address: its data owes no PERR# (the claim may be a wrong one)
    "no_perr_owed_after_a_bad_address": (Case(
        "", *_command_write(0x0040), r("F", ad=0x1000, cbe=MW),
        r("IDT", ad=1, cbe=0, claim=1, par_flip=True), r("", par_flip=True, claim=0), "",
        "", devices=(16,)),
        [(5, "address_parity"), (6, "write_data_parity")]),
}


@pytest.mark.parametrize("name", sorted(REPORTING_CASES))
def test_error_reporting(name):
    case, expected = REPORTING_CASES[name]
    assert fired(simulate(case)["pulses"]) == expected


def test_log_names_the_target():
    """With ``target_visible`` the log keeps the agent that answered: in the clock, or
    the last one of the transaction (DEVSEL# dropped by agent 5, clock 4); none on an idle
    bus (clock 8)."""
    case = Case("", r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), r("FID", target=5),
                r("FI", target=NO_TARGET), r("FIS", target=5), r("IS"),
                r("", target=NO_TARGET), r("D", target=3), r("", target=NO_TARGET),
                target_visible=True)
    out = simulate(case, read_log=True)
    assert out["log"][:3] == [(4, _bits("devsel_dropped"), 0, 5),
                              (8, _bits("devsel_while_idle"), NO_MASTER, 3),
                              (0, 0, NO_MASTER, NO_TARGET)]


def test_parity_rules_name_the_transaction_just_ended():
    """PAR of a final data phase comes the clock after it: the read data parity rule
    fired there names master 1 and target 4 of the transaction that just ended."""
    case = Case(r("", gnt=0b10), r("F", ad=0x2000, cbe=MR), r("I", cbe=0, gnt=0),
                r("ID", target=4), r("IDT", ad=0xBAD), r("", par_flip=True, target=NO_TARGET),
                "", target_visible=True)
    out = simulate(case, read_log=True)
    assert out["log"][:2] == [(5, _bits("read_data_parity"), 1, 4),
                              (0, 0, NO_MASTER, NO_TARGET)]


# --- starting on a busy bus, holding FRAME# after STOP#, DAC, parking ----------------

def test_start_after_irdy_on_an_idle_bus_is_a_busy_bus_start():
    """IRDY# left asserted without a transaction, then an address phase: the tracking
    has no transaction, and the start is caught all the same (board and simulation)."""
    case = Case("", "I", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0), "")
    expected = [(1, "irdy_without_frame"), (2, "busy_bus_start")]
    assert fired(simulate(case)["pulses"]) == expected
    assert fired(simulate(case, width=32, masters=1,
                          arbiter_visible=False)["pulses"]) == expected


@pytest.mark.parametrize("gnt, expected", [
    (0b10, [(4, "frame_reasserted"), (4, "busy_bus_start")]),   # master 1 starts
    (0b01, [(4, "frame_reasserted")]),                          # master 0 again
])
def test_frame_rising_in_a_waiting_final_phase(gnt, expected):
    """FRAME# asserted while the final data phase waits (IRDY# still asserted): the
    tracking keeps the transaction and calls it frame_reasserted; when another master
    holds GNT# it is also that master starting on a busy bus."""
    case = Case(r("", gnt=0b01), r("F", ad=0x1000, cbe=MW), r("I", ad=1, cbe=0),
                r("ID", gnt=gnt), "FID", "FIDT", "IDT", "")
    assert fired(simulate(case)["pulses"]) == expected


def test_fast_back_to_back_by_another_master_on_a_board():
    """A board sees its own GNT# only: the pins of a fast back-to-back pair are legal."""
    case = Case("", r("F", ad=0x1000, cbe=MW), r("IDT", ad=1, cbe=0),
                r("F", ad=0x2000, cbe=MW), r("IDT", ad=2, cbe=0), "")
    assert fired(simulate(case, width=32, masters=1, arbiter_visible=False)["pulses"]) == []
    # after a retry (STOP#) the master may start at once as well
    case = Case("", r("F", ad=0x1000, cbe=MR), r("I", cbe=0), "IDS",
                r("F", ad=0x1000, cbe=MR), r("I", cbe=0), "ID", r("IDT", ad=3), "")
    assert fired(simulate(case)["pulses"]) == []


def test_frame_held_after_a_disconnect_with_data():
    case = Case("", r("F", ad=0x6000, cbe=MW), r("FI", ad=1, cbe=0), "FIDTS",
                r("FIDS", ad=2), "IDS", "")
    assert fired(simulate(case)["pulses"]) == [(4, "frame_held_after_stop")]


@pytest.mark.parametrize("width", [32, 64])
def test_dac_below_4g_on_either_width(width):
    """AD[31:0] of the second address phase holds the upper half on both widths; a
    64-bit master repeats it on AD[63:32], which the rule does not need."""
    wide = width == 64
    q = "Q" if wide else ""
    hi = {"ad_hi": 0, "cbe_hi": MR} if wide else {}
    case = Case("", r("F" + q, ad=0x1000, cbe=DAC, **hi), r("F" + q + "!", ad=0, cbe=MR),
                r("I", cbe=0, **({"cbe_hi": 0} if wide else {})), "ID", r("IDT", ad=0x77), "")
    out = simulate(case, width=width, masters=1, arbiter_visible=False)
    assert fired(out["pulses"]) == [(2, "dac_below_4g")]


def _floating(clocks, gnt):
    """Idle clocks with ``gnt`` asserted and nobody driving: pulled-up AD, C/BE#, PAR."""
    return [r("", gnt=gnt, ad=0xFFFF_FFFF, cbe=0xF, par_flip=True)] * clocks


def test_parked_bus_parity_on_the_board_checks_its_own_parking():
    out = simulate(VIOLATIONS["parked_bus_parity"], width=32, masters=1,
                   arbiter_visible=False)
    assert fired(out["pulses"]) == [(10, "parked_bus_parity")]


def test_parked_bus_run_restarts_when_gnt_changes_or_the_bus_is_used():
    # nine clocks for master 0, a clock with no GNT#, nine for master 1: clean
    case = Case(r("", gnt=0), *_floating(9, 0b01), r("", gnt=0, par_flip=True),
                *_floating(9, 0b10), r("", gnt=0), "")
    assert fired(simulate(case)["pulses"]) == []
    # GNT# moved at once (an arbitration rule) is a new run all the same
    case = Case(r("", gnt=0), *_floating(9, 0b01), *_floating(9, 0b10), r("", gnt=0), "")
    assert fired(simulate(case)["pulses"]) == [(10, "gnt_switch_while_idle")]
    # a transaction in between starts the count again: the idle clock after its final
    # phase (12, PAR of its data still driven) is the first of the new run
    case = Case(r("", gnt=0), *_floating(9, 0b01), r("F", ad=0x1000, cbe=MW),
                r("IDT", ad=1, cbe=0), "", *_floating(8, 0b01), r("!", par_flip=True),
                r("", gnt=0), "")
    assert fired(simulate(case)["pulses"]) == [(21, "parked_bus_parity")]
    # reset: no parking while RST# is asserted, nor in its last clock
    case = Case(*[r("R", gnt=1, ad=0xFFFF_FFFF, cbe=0xF, par_flip=True)] * 12,
                r("", gnt=0), "")
    assert fired(simulate(case)["pulses"]) == []


def test_parked_bus_keeps_firing_while_it_floats():
    case = Case(r("", gnt=0), *_floating(13, 0b01), r("", gnt=0), "")
    assert fired(simulate(case)["pulses"]) == [(c, "parked_bus_parity")
                                               for c in (10, 11, 12, 13)]


# --- the violation log ---------------------------------------------------------------

_EMPTY = (0, 0, NO_MASTER)


def test_log_holds_every_rule_of_each_clock_in_order():
    out = simulate(Case("", "D", "", "TS", "", "", "D", ""), read_log=True)
    assert out["log_entries"] == 3
    assert out["log"] == [
        (1, _bits("devsel_while_idle"), NO_MASTER),
        (3, _bits("trdy_without_devsel", "stop_without_claim"), NO_MASTER),
        (6, _bits("devsel_while_idle"), NO_MASTER),
    ] + [_EMPTY] * (LOG_DEPTH - 3)
    assert out["log"][0][0] == out["first_cycle"]


#: Master 1's transaction withdraws IRDY# (clock 4), master 0's address phase carries a
#: reserved command (clock 9), DEVSEL# on the idle bus (clock 15).
_MASTERS_CASE = Case(
    r("", gnt=0b10), r("F", ad=0x1000, cbe=MW), r("FI", ad=1, cbe=0), "FID", "FD", "FIDT",
    "IDT", r("", gnt=0), r("", gnt=0b01), r("F", ad=0x1000, cbe=0b1000), r("I", cbe=0),
    "I", "I", "I", "", "D", "")


@pytest.mark.parametrize("arbiter_visible", [True, False])
def test_log_names_the_master_of_the_transaction(arbiter_visible):
    out = simulate(_MASTERS_CASE, arbiter_visible=arbiter_visible, read_log=True)
    masters = (1, 0) if arbiter_visible else (NO_MASTER, NO_MASTER)
    assert out["log_entries"] == 3
    assert out["log"][:4] == [(4, _bits("irdy_withdrawn"), masters[0]),
                              (9, _bits("reserved_command"), masters[1]),
                              (15, _bits("devsel_while_idle"), NO_MASTER), _EMPTY]


def test_log_fills_up_then_only_counts():
    rule = RULES_BY_NAME["devsel_while_idle"]
    out = simulate(Case("", *["D"] * 20, ""), read_log=True)
    assert out["log_entries"] == LOG_DEPTH
    assert out["log"] == [(1 + i, 1 << rule.id, NO_MASTER) for i in range(LOG_DEPTH)]
    assert out["counts"][rule.id] == 20


@pytest.mark.parametrize("before", [2, 18])
def test_clear_empties_the_log(before):
    """``before`` violations (the log full or not), then clear in a clock with one more
    (clear wins: it is not logged), then one more."""
    rule = RULES_BY_NAME["devsel_while_idle"]
    clear_at = 1 + before
    out = simulate(Case("", *["D"] * before, "D", "", "D", ""), clear_at=clear_at,
                   read_log=True)
    assert out["log_entries"] == 1
    assert out["log"] == [(clear_at + 2, 1 << rule.id, NO_MASTER)] + \
        [_EMPTY] * (LOG_DEPTH - 1)
    assert out["first_cycle"] == clear_at + 2


def test_disabled_rule_is_not_logged():
    out = simulate(Case("", "D", "", "I", "", disable=("devsel_while_idle",)),
                   read_log=True)
    assert out["log_entries"] == 1
    assert out["log"][:2] == [(3, _bits("irdy_without_frame"), NO_MASTER), _EMPTY]


# --- randomised legal traffic --------------------------------------------------------

def random_transaction(rng):
    """Rows of one legal transaction, drawn from the PCI rules (not from the checker).

    Clock numbers count from the last address phase (= 1). The initiator plans its IRDY#
    waits and the target its DEVSEL# clock, TRDY# waits and termination; both obey the
    latency limits, turnaround and hold rules of the specification.
    """
    kind = rng.choice(["mem_read", "mem_write", "io_read", "io_write", "config", "dac"])
    command = {"mem_read": rng.choice([MR, MRL, MRM]), "mem_write": rng.choice([MW, MWI]),
               "io_read": IOR, "io_write": IOW, "config": rng.choice([CFGR, CFGW]),
               "dac": rng.choice([MR, MW, MRM])}[kind]
    memory = kind in ("mem_read", "mem_write", "dac")
    read = command in (MR, MRL, MRM, IOR, CFGR)
    wide = memory and rng.random() < 0.5
    ack64 = wide and rng.random() < 0.7
    address = rng.randrange(1 << 30) << 2
    if kind.startswith("io"):
        lane = rng.randrange(4)
        address |= lane
        enables = lambda: ~(1 << lane) & 0xF                       # noqa: E731
    elif command == MWI:
        enables = lambda: 0                                         # noqa: E731
    else:
        if memory:
            address |= rng.choice([0b00, 0b10])
        enables = lambda: rng.randrange(16)                         # noqa: E731
    phases = rng.randint(1, 5) if memory else 1
    ending = rng.choice(["completion"] * 3 + ["retry", "disconnect_data", "target_abort",
                                               "master_abort"] +
                        (["disconnect_nodata"] if phases > 1 else []))
    stop_phase = {"retry": 0, "disconnect_data": rng.randrange(phases),
                  "disconnect_nodata": rng.randrange(1, phases) if phases > 1 else 0,
                  "target_abort": rng.randrange(phases)}.get(ending)
    devsel_clock = rng.randint(2, 5)
    q, a = ("Q" if wide else ""), ("A" if ack64 else "")

    rows = []
    if kind == "dac":
        rows.append(r("F" + q, ad=address, cbe=DAC))
        address = rng.randrange(1, 16)
    rows.append(r("F" + q, ad=address, cbe=command))

    if ending == "master_abort":
        irdy_clock = rng.randint(2, 4)
        single = phases == 1
        frame_off = irdy_clock if single else 6   # FRAME# only with IRDY#, then clock 6
        release = 6 if single else 7
        data = rng.randrange(1 << 32)
        for clock in range(2, release + 1):
            irdy = irdy_clock <= clock < release
            frame = clock < frame_off
            fields = {"cbe": enables()} if clock == 2 else {}
            if clock == 2 and not read:
                fields["ad"] = data
            rows.append(r(("F" + q if frame else "") + ("I" if irdy else ""), **fields))
        return rows + [r("")]

    clock = 1
    phase = 0
    frame = True
    last = False
    while True:
        first = phase == 0
        stopping = phase == stop_phase
        if first:
            earliest = max(devsel_clock, 3 if read else 2)
            if stopping and ending == "target_abort":
                earliest = max(earliest, devsel_clock + 1)  # DEVSEL# first, then abort
            answer_clock = min(earliest + rng.choice([0, 0, 1, 4, 12]), 17)
            tgt_wait = answer_clock - 2
        else:
            tgt_wait = rng.choice([0, 0, 1, 3, 7])
        ini_wait = rng.choice([0, 0, 0, 1, 2, 7])
        if last:                       # ending after STOP#: FRAME# goes at once
            ini_wait, tgt_wait = 0, 0
        be = enables()
        data = rng.randrange(1 << 32)
        for c in range(max(ini_wait, tgt_wait) + 1):
            clock += 1
            irdy = c >= ini_wait
            if irdy and c == ini_wait:
                # FRAME# may change only when IRDY# is asserted, and holds until completion
                frame = not (last or phase == phases - 1)
            devsel = clock >= devsel_clock
            answer = c >= tgt_wait
            lines = ("F" + q if frame else "") + ("I" if irdy else "")
            target = ("D" + a) if devsel else ""
            if answer:
                if last or stopping:
                    kind_now = "target_abort" if (ending == "target_abort") else ending
                    if kind_now == "target_abort":
                        target = "S"
                    elif kind_now == "disconnect_data" and not last:
                        target += "TS"
                    else:
                        target += "S"
                else:
                    target += "T"
            fields = {}
            if c == 0:
                fields["cbe"] = be
                fields["cbe_hi"] = be ^ 0b0101 if command != MWI else 0
                if not read:
                    fields.update(ad=data, ad_hi=data ^ 0x5A5A5A5A)
            if read and answer and c == tgt_wait:
                fields.update(ad=data, ad_hi=~data & 0xFFFFFFFF)
            rows.append(r(lines + target, **fields))
        if not frame:
            break
        if last or stopping:
            last = True
        phase += 1
    return rows + [r("")]


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_random_legal_traffic_is_clean(seed):
    rng = random.Random(seed)
    rows = [r("RQ"), r("R"), ""]
    for _ in range(25):
        rows += random_transaction(rng)
        rows += [""] * rng.choice([0, 0, 1, 3])
    out = simulate(Case(*rows))
    assert fired(out["pulses"]) == [], f"seed {seed}"
