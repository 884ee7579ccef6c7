# SPDX-License-Identifier: BSD-2-Clause
"""The ``check`` register block: the protocol checker's rule enables, sticky flags, per-rule
counters, first violation and violation log, and the constants its gateware shares with the
host (data, no gateware: pcispy/check/checker.py reads them here).
"""

from pcispy.csr.map import Access, Block, Field, Register, reg32
from pcispy.pci.rules import RULES as _CHECK_RULES

__all__ = ["CHECK", "COUNT_WIDTH", "LOG_DEPTH", "NO_MASTER"]

#: Default bits of each rule's saturating violation counter (the width check.count shows).
COUNT_WIDTH = 16
#: Entries of the violation log: the first this many clocks with a violation since the
#: last clear are kept; later ones are only flagged and counted.
LOG_DEPTH = 16
#: ``log_master`` when the master is not known (no transaction in progress, no single
#: GNT# before its address phase, or the checker does not see every GNT#).
NO_MASTER = 7


# One bit per rule of RULES in the enable and flag pairs (rule id n is bit n of
# enable_lo:enable_hi), counters read through count_index.
_CHECK_N = len(_CHECK_RULES)
_CHECK_NAMES = {rule.id: rule.name for rule in _CHECK_RULES}
_CHECK_INDEX_BITS = max(1, (_CHECK_N - 1).bit_length())
_CHECK_LOG_INDEX_BITS = max(1, (LOG_DEPTH - 1).bit_length())
_CHECK_LOG_ENTRIES_BITS = LOG_DEPTH.bit_length()
assert 32 < _CHECK_N <= 64, "check.enable/flags are one _lo/_hi pair of registers"

CHECK = Block("check", 0x280, (
    Register("control", 0x00, (
        Field("clear", 0, 1, Access.WO, 0, "clear every flag and counter, status.any, the "
              "first-violation record and the violation log (wins over a violation in the "
              "same clock)"),
    ), "checker commands"),
    Register("status", 0x04, (
        Field("any", 0, 1, Access.RO, 0, "some enabled rule was broken since the last clear"),
        Field("index_error", 1, 1, Access.RO, 0, "count_index names no rule: the read is "
              "refused and count reads 0"),
        Field("first_rule", 8, 8, Access.RO, 0, "id of the first broken rule (lowest id if "
              "several broke in that clock); valid while any", _CHECK_NAMES),
        Field("rules", 16, 8, Access.RO, _CHECK_N, "number of rules this gateware checks"),
    ), "checker status"),
    reg32("first_cycle", 0x08, Access.RO, "value of `cycle` at the first violation; valid "
          "while status.any"),
    reg32("cycle", 0x0C, Access.RO, "the checker's free-running PCI clock counter (wraps)"),
    Register("enable_lo", 0x10, (
        Field("enable", 0, 32, Access.RW, (1 << 32) - 1, "bit n enables rule n (rules "
              "0-31); a disabled rule neither pulses, nor flags, nor counts"),
    ), "rule enables, rules 0-31"),
    Register("enable_hi", 0x14, (
        Field("enable", 0, _CHECK_N - 32, Access.RW, (1 << (_CHECK_N - 32)) - 1,
              f"bit n enables rule 32+n (rules 32-{_CHECK_N - 1})"),
    ), f"rule enables, rules 32-{_CHECK_N - 1}"),
    Register("flags_lo", 0x18, (
        Field("flags", 0, 32, Access.RO, 0, "bit n: rule n was broken since the last clear"),
    ), "sticky violation flags, rules 0-31"),
    Register("flags_hi", 0x1C, (
        Field("flags", 0, _CHECK_N - 32, Access.RO, 0, "bit n: rule 32+n was broken since "
              "the last clear"),
    ), f"sticky violation flags, rules 32-{_CHECK_N - 1}"),
    Register("count_index", 0x20, (
        Field("index", 0, _CHECK_INDEX_BITS, Access.RW, 0, "rule whose counter `count` "
              "shows", _CHECK_NAMES),
    ), "violation counter select"),
    Register("count", 0x24, (
        Field("count", 0, COUNT_WIDTH, Access.RO, 0, "violations of rule count_index "
              "since the last clear, saturating at all ones"),
    ), "violation counter of the selected rule"),
    Register("log_index", 0x28, (
        Field("index", 0, _CHECK_LOG_INDEX_BITS, Access.RW, 0, "violation-log entry that "
              "log_cycle, log_rules_lo/_hi and log_info.master show (from the clock after "
              "this write)"),
    ), "violation log entry select"),
    reg32("log_cycle", 0x2C, Access.RO, "`cycle` of the clock of entry log_index (0 at or "
          "beyond log_info.entries)"),
    Register("log_rules_lo", 0x30, (
        Field("rules", 0, 32, Access.RO, 0, "bit n: rule n was broken in the clock of entry "
              "log_index (rules 0-31)"),
    ), "rules broken in the clock of the selected log entry, rules 0-31"),
    Register("log_rules_hi", 0x34, (
        Field("rules", 0, _CHECK_N - 32, Access.RO, 0, "bit n: rule 32+n was broken in the "
              "clock of entry log_index"),
    ), f"rules broken in the clock of the selected log entry, rules 32-{_CHECK_N - 1}"),
    Register("log_info", 0x38, (
        Field("entries", 0, _CHECK_LOG_ENTRIES_BITS, Access.RO, 0, f"log entries stored "
              f"since the last clear: one per clock in which an enabled rule broke, the "
              f"first {LOG_DEPTH} (later ones are only flagged and counted)"),
        Field("master", 8, 3, Access.RO, NO_MASTER, "entry log_index: the master of "
              "the transaction in progress in its clock (the one whose GNT# was asserted "
              f"in the clock before the address phase); {NO_MASTER}: unknown (no "
              "transaction, no single GNT#, or the checker does not see every GNT#, as on "
              "a board in a slot)"),
    ), "violation log: entries stored, master of the selected entry"),
), "protocol checker: per-rule flags and counters, first violation, violation log (rules: "
   "pcispy check --list-rules)")
