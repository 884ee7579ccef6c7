# SPDX-License-Identifier: BSD-2-Clause
"""The PCI protocol rules pcispy checks, declared once.

Two monitors check them, and each rule says which (:attr:`Rule.seen_by`):

- ``"pins"``: the protocol checker (:mod:`pcispy.check.checker`) sees only line
  levels, as any bus analyzer on the connector does. It runs on the board (live, beside
  the spy) and in the simulated system. :data:`RULES` are its rules; a rule's ``id`` is its
  bit in the checker's violation vector and its counter index.
- ``"drivers"``: the simulated system's bus resolver (:mod:`pcispy.sim.bfm.resolver`) knows
  every agent's output enables, so it also sees who drives each line: two drivers in one
  clock, a change of driver without a turnaround clock, a sustained tri-state line
  released while asserted, a parked bus left floating. No monitor on the pins can see
  these. :data:`DRIVER_RULES` are its rules; their ``id`` is the resolver's own index.

Clock numbering used in the descriptions: the (last) address phase of a transaction is
clock 1, so fast DEVSEL# is clock 2, medium 3, slow 4 and subtractive 5. The references
name sections of the PCI Local Bus Specification, revision 3.0.
"""

from typing import NamedTuple

__all__ = ["Rule", "PINS", "DRIVERS", "CULPRITS", "RULES", "RULES_BY_NAME", "LATENCY_RULES",
           "DRIVER_RULES", "DRIVER_RULES_BY_NAME", "ALL_RULES"]

#: :attr:`Rule.seen_by` of a rule the protocol checker sees on the pins.
PINS = "pins"
#: :attr:`Rule.seen_by` of a rule only the simulated system's resolver sees (it needs to
#: know which agent drives a line).
DRIVERS = "drivers"


#: Who breaks a rule, by :attr:`Rule.culprit`: the agent a log names for it.
CULPRITS = {
    "initiator": "the master of the transaction",
    "target": "the target that claimed (or answered) the transaction",
    "sender": "the agent that drove the data: the master on a write, the target on a read",
    "receiver": "the agent that received the data: the target of a write, the master of a "
                "read",
    "arbiter": "the arbiter (GNT#)",
    "parked": "the agent the bus is parked on (its GNT# asserted on an idle bus)",
    "any": "whoever drove the line; a monitor on the pins cannot tell",
    "reporter": "a device whose Command register obliges it to report the error",
    "drivers": "the agents the resolver names (it knows who drives each line)",
}


class Rule(NamedTuple):
    """One protocol rule: ``id`` (index among the rules of its monitor), short ``name``
    (unique over both monitors), one-sentence ``description`` of the violation,
    ``reference`` (specification sections), ``seen_by`` (:data:`PINS` or :data:`DRIVERS`),
    ``culprit`` (who breaks it, a key of :data:`CULPRITS`: the agent a violation log names)."""
    id: int
    name: str
    description: str
    reference: str
    seen_by: str
    culprit: str


_SPEC = "PCI LB 3.0"

# (name, description of the violation, reference, culprit). The order fixes the ids: append
# only.
_RULE_TEXT = (
    # -- initiator signalling ------------------------------------------------------------
    ("frame_without_irdy",
     "FRAME# was deasserted while IRDY# was deasserted (the last data phase must be "
     "signalled with IRDY# asserted).",
     f"{_SPEC} §3.2.1, §3.3.3.1", "initiator"),
    ("irdy_without_frame",
     "IRDY# was asserted on an idle bus without FRAME# (or was not released the clock after "
     "the last data phase).",
     f"{_SPEC} §3.2.1, §3.3.1", "initiator"),
    ("irdy_in_address_phase",
     "IRDY# was asserted during an address phase.",
     f"{_SPEC} §3.3.1, §3.4.2", "initiator"),
    ("frame_reasserted",
     "FRAME# was asserted again after the initiator had signalled the final data phase, "
     "before that phase completed.",
     f"{_SPEC} §3.2.1, §3.3.3.1", "initiator"),
    ("frame_dropped_in_wait",
     "FRAME# was deasserted while IRDY# waited for the target (the initiator may not change "
     "FRAME# until the data phase completes; master abort aside).",
     f"{_SPEC} §3.2.1", "initiator"),
    ("irdy_withdrawn",
     "IRDY# was deasserted before its data phase completed on a claimed transaction.",
     f"{_SPEC} §3.2.1", "initiator"),
    ("master_abort_early",
     "The initiator ended an unclaimed transaction (released IRDY#) before DEVSEL# was "
     "sampled deasserted on clock 5.",
     f"{_SPEC} §3.3.3.1", "initiator"),
    # -- target signalling ---------------------------------------------------------------
    ("devsel_while_idle",
     "DEVSEL# was asserted while no transaction was in progress (or in an address phase).",
     f"{_SPEC} §3.2.1, §3.6.1", "target"),
    ("devsel_late",
     "DEVSEL# was first asserted after clock 5, later than subtractive decode.",
     f"{_SPEC} §3.6.1", "target"),
    ("devsel_dropped",
     "DEVSEL# was deasserted before the transaction ended without STOP# asserted (only a "
     "target abort may release DEVSEL# early).",
     f"{_SPEC} §3.3.3.2.1", "target"),
    ("devsel_on_special_cycle",
     "DEVSEL# was asserted on a Special Cycle, which no target may claim.",
     f"{_SPEC} §3.6.2", "target"),
    ("trdy_without_devsel",
     "TRDY# was asserted while DEVSEL# was deasserted.",
     f"{_SPEC} §3.3.3.2.1", "target"),
    ("stop_without_claim",
     "STOP# was asserted while DEVSEL# was deasserted and no target had claimed the "
     "transaction (a target abort needs an earlier DEVSEL#).",
     f"{_SPEC} §3.3.3.2.1", "target"),
    ("stop_released_early",
     "STOP# was released after a data phase completed while FRAME# was still asserted (the "
     "target must hold STOP# until the final data phase).",
     f"{_SPEC} §3.3.3.2.1", "target"),
    ("stop_withdrawn",
     "STOP# was deasserted before its data phase completed (before IRDY# was asserted).",
     f"{_SPEC} §3.2.1, §3.3.3.2.1", "target"),
    ("trdy_withdrawn",
     "TRDY# was deasserted before its data phase completed (before IRDY# was asserted).",
     f"{_SPEC} §3.2.1", "target"),
    ("target_response_changed",
     "The target asserted TRDY# or STOP#, or released DEVSEL#, while a data phase it had "
     "already answered waited for IRDY#.",
     f"{_SPEC} §3.2.1", "target"),
    ("trdy_in_read_turnaround",
     "TRDY# was asserted in the turnaround clock right after the address phase of a read.",
     f"{_SPEC} §3.3.1, §3.2.4", "target"),
    ("data_after_stop",
     "Data moved (IRDY# and TRDY#) after a data phase had already completed with STOP#.",
     f"{_SPEC} §3.3.3.2.1", "target"),
    # -- latency -------------------------------------------------------------------------
    ("initiator_latency",
     "IRDY# was not asserted within 8 clocks of the address phase or of the previous data "
     "phase.",
     f"{_SPEC} §3.5.2", "initiator"),
    ("target_initial_latency",
     "The claiming target did not assert TRDY# or STOP# within 16 clocks of the address "
     "phase (host bridges are allowed 32; mask this rule for them).",
     f"{_SPEC} §3.5.1.1", "target"),
    ("target_initial_latency_bridge",
     "The claiming target did not assert TRDY# or STOP# within 32 clocks of the address "
     "phase, beyond even the host-bridge allowance.",
     f"{_SPEC} §3.5.1.1", "target"),
    ("target_subsequent_latency",
     "The target did not assert TRDY# or STOP# within 8 clocks of the previous data phase.",
     f"{_SPEC} §3.5.1.2", "target"),
    # -- commands and addresses ----------------------------------------------------------
    ("reserved_command",
     "An address phase carried a reserved command code (0100, 0101, 1000 or 1001).",
     f"{_SPEC} §3.1.1", "initiator"),
    ("dac_after_dac",
     "The second address phase of a Dual Address Cycle carried the DAC command again.",
     f"{_SPEC} §3.9", "initiator"),
    ("config_reserved_type",
     "A configuration command had AD[1:0] = 10 or 11 in its address phase (only type 0 "
     "and type 1 exist).",
     f"{_SPEC} §3.2.2.3", "initiator"),
    ("io_byte_enables_mismatch",
     "An I/O transaction enabled a byte below the one AD[1:0] addresses, or not that byte "
     "(with some byte enabled).",
     f"{_SPEC} §3.2.2.1", "initiator"),
    ("mwi_byte_enables",
     "A Memory Write and Invalidate data phase had a byte enable deasserted.",
     f"{_SPEC} §3.1.1", "initiator"),
    ("reserved_burst_order_continued",
     "A memory burst with the reserved burst order (AD[1:0] = x1) moved a second data word "
     "instead of disconnecting after the first.",
     f"{_SPEC} §3.2.2.2", "target"),
    # -- stability during waits ----------------------------------------------------------
    ("byte_enables_changed_in_wait",
     "C/BE# changed while IRDY# was asserted and the data phase had not completed.",
     f"{_SPEC} §3.2.2, §3.3.1", "initiator"),
    ("write_data_changed_in_wait",
     "Write data on AD changed while IRDY# was asserted and the data phase had not "
     "completed.",
     f"{_SPEC} §3.3.2", "initiator"),
    ("read_data_changed_in_wait",
     "Read data on AD changed while TRDY# was asserted and the data phase had not "
     "completed.",
     f"{_SPEC} §3.3.1", "target"),
    # -- parity and error reporting ------------------------------------------------------
    ("address_parity",
     "PAR one clock after an address phase did not give even parity over AD[31:0] and "
     "C/BE#[3:0].",
     f"{_SPEC} §3.7.1, §3.7.3", "initiator"),
    ("write_data_parity",
     "PAR one clock after a write data transfer did not give even parity over AD[31:0] and "
     "C/BE#[3:0].",
     f"{_SPEC} §3.7.1", "initiator"),
    ("read_data_parity",
     "PAR one clock after a read data transfer did not give even parity over AD[31:0] and "
     "C/BE#[3:0].",
     f"{_SPEC} §3.7.1", "target"),
    ("data_parity64",
     "PAR64 one clock after a 64-bit data transfer did not give even parity over AD[63:32] "
     "and C/BE#[7:4].",
     f"{_SPEC} §3.8, §3.7.1", "sender"),
    ("perr_timing",
     "PERR# was asserted although no data was valid on AD two clocks earlier (PERR# "
     "reports the data of a phase two clocks after it completes, or earlier while the "
     "phase waits, once its data and PAR are valid).",
     f"{_SPEC} §3.7.4.1", "any"),
    ("perr_without_parity_error",
     "PERR# was asserted two clocks after valid data whose parity (PAR the clock after "
     "it) was correct.",
     f"{_SPEC} §3.7.4.1", "receiver"),
    # -- arbitration (when every master's GNT# is visible) -------------------------------
    ("frame_without_gnt",
     "A transaction started although no GNT# was asserted in the clock before its address "
     "phase.",
     f"{_SPEC} §3.4.1", "initiator"),
    ("multiple_gnt",
     "More than one GNT# was asserted in the same clock.",
     f"{_SPEC} §3.4.1", "arbiter"),
    ("gnt_switch_while_idle",
     "On an idle bus the arbiter moved GNT# from one master to another without a clock "
     "with no GNT# between them.",
     f"{_SPEC} §3.4.1", "arbiter"),
    # -- 64-bit extension ----------------------------------------------------------------
    ("req64_frame_mismatch",
     "REQ64# did not follow FRAME# (it must be asserted with the address phase and "
     "released with FRAME#, and never asserted on its own outside reset).",
     f"{_SPEC} §3.8", "initiator"),
    ("req64_non_memory",
     "REQ64# was asserted on a command other than a memory command.",
     f"{_SPEC} §3.8", "initiator"),
    ("ack64_without_req64",
     "ACK64# was asserted on a transaction whose initiator had not asserted REQ64#.",
     f"{_SPEC} §3.8", "target"),
    ("ack64_devsel_mismatch",
     "ACK64# was not in step with DEVSEL# (asserted without it, or changed while DEVSEL# "
     "held).",
     f"{_SPEC} §3.8", "target"),
    # -- reset ---------------------------------------------------------------------------
    ("signals_during_reset",
     "FRAME#, IRDY#, TRDY#, STOP#, DEVSEL#, LOCK#, PERR#, SERR# or ACK64# was asserted "
     "while RST# was asserted.",
     f"{_SPEC} §4.3.2, §2.2.1", "any"),
    # -- bus ownership, termination and parity (appended) --------------------------------
    ("busy_bus_start",
     "An address phase began (FRAME# asserted) although FRAME# or IRDY# was asserted in "
     "the clock before, and that clock was not the completed final data phase of a fast "
     "back-to-back pair: a master may start only on an idle bus (where every GNT# is "
     "seen, a start by a master other than the one that just finished, right after its "
     "final data phase or while that phase still waited, breaks it too).",
     f"{_SPEC} §3.4.1, §3.4.2", "initiator"),
    ("frame_held_after_stop",
     "FRAME# was still asserted in the clock after a data phase completed with STOP# "
     "asserted (the initiator must deassert FRAME# as soon as IRDY# is asserted once it "
     "has seen STOP#).",
     f"{_SPEC} §3.3.3.2.1", "initiator"),
    ("perr_released_early",
     "PERR#, asserted early while a data phase waited, was released before two clocks "
     "after that data phase completed.",
     f"{_SPEC} §3.7.4.1", "receiver"),
    ("dac_below_4g",
     "A Dual Address Cycle carried zero as the upper 32 address bits in its second "
     "address phase (an address below 4 GiB takes a single address phase).",
     f"{_SPEC} §3.9", "initiator"),
    ("parked_bus_parity",
     "On a bus parked for more than nine clocks (idle, the same GNT# asserted), PAR did "
     "not cover the AD and C/BE# of the clock before: the parked agent left AD, C/BE# or "
     "PAR floating (pulled-up lines read all ones with PAR 1).",
     f"{_SPEC} §3.4.3", "parked"),
    # -- error reporting the Command register asks for (appended) ------------------------
    ("perr_not_reported",
     "A data phase completed with a data parity error and its receiver (the target of a "
     "write, the master of a read), whose Command register has Parity Error Response set, "
     "did not assert PERR# two clocks after the data phase (the checker keeps each "
     "device's Command register from the configuration cycles it sees; the target of a "
     "memory or I/O write is known only where the monitor sees who drives DEVSEL#).",
     f"{_SPEC} §3.7.4.1, §6.2.2", "receiver"),
    ("serr_not_reported",
     "An address phase had a parity error while some device's Command register had both "
     "Parity Error Response and SERR# Enable set, and nobody asserted SERR# within three "
     "clocks after the PAR that showed it (a device detecting an address parity error "
     "with both bits set must assert SERR#).",
     f"{_SPEC} §3.7.3, §3.7.4.2, §6.2.2", "reporter"),
)

#: Every rule the checker evaluates on the pins, in id order (the id is the bit of the
#: checker's violation vector and its counter index).
RULES = tuple(Rule(index, name, description, reference, PINS, culprit)
              for index, (name, description, reference, culprit) in enumerate(_RULE_TEXT))

#: ``{name: Rule}``.
RULES_BY_NAME = {rule.name: rule for rule in RULES}

#: The latency rules, which known rule breakers (legacy bridges, host bridges) trip; users
#: commonly mask them on buses with such devices.
LATENCY_RULES = ("initiator_latency", "target_initial_latency",
                 "target_initial_latency_bridge", "target_subsequent_latency")


# (name, description of the violation, reference) of the resolver's rules. Append only.
_DRIVER_RULE_TEXT = (
    ("contention",
     "Two agents drove the same tri-state or sustained tri-state line in the same clock.",
     f"{_SPEC} §2.1, §3.1"),
    ("no_turnaround",
     "An agent drove a shared line in the clock right after another agent had driven it, "
     "without a turnaround clock in which nobody drove it.",
     f"{_SPEC} §2.1, §3.3.1, §3.4.3"),
    ("sts_released_asserted",
     "An agent stopped driving a sustained tri-state line (FRAME#, IRDY#, TRDY#, STOP#, "
     "DEVSEL#, PERR#, REQ64#, ACK64#) in a clock after it drove it asserted, instead of "
     "driving it deasserted for one clock first.",
     f"{_SPEC} §2.1"),
    ("parked_bus_floating",
     "The bus was idle with an agent's GNT# asserted and AD[31:0] or C/BE#[3:0] was still "
     "not driven eight clocks later, or PAR one clock after that: the parked agent left "
     "the bus floating.",
     f"{_SPEC} §3.4.3"),
    ("par_driver_mismatch",
     "PAR (PAR64) was driven in a clock by an agent other than the one that drove AD[31:0] "
     "(AD[63:32]) in the clock before, or not driven after AD was.",
     f"{_SPEC} §3.7.1"),
    ("driven_during_reset",
     "An agent drove a shared bus line while RST# was asserted (every PCI output floats "
     "during reset; REQ64#, which the central resource drives then, excepted).",
     f"{_SPEC} §4.3.2"),
)

#: Every rule the resolver checks, in its index order.
DRIVER_RULES = tuple(Rule(index, *text, DRIVERS, "drivers")
                     for index, text in enumerate(_DRIVER_RULE_TEXT))

#: ``{name: Rule}`` of the resolver's rules.
DRIVER_RULES_BY_NAME = {rule.name: rule for rule in DRIVER_RULES}

#: The rules of both monitors: the checker's, then the resolver's.
ALL_RULES = RULES + DRIVER_RULES

if len({rule.name for rule in ALL_RULES}) != len(ALL_RULES):
    raise AssertionError("a rule name is used twice")
if not {rule.culprit for rule in ALL_RULES} <= set(CULPRITS):
    raise AssertionError("a rule names a culprit CULPRITS does not describe")
