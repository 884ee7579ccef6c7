# SPDX-License-Identifier: BSD-2-Clause
"""PCI's timing, as a build's report must meet it: the budgets, the check and its words.

:func:`check` states what keeps a report (:mod:`.routed`) from meeting PCI at a bus clock
(``make timing``): the pci clock, a domain of ``clocks_mhz`` below its frequency, an output
outside its I/O register, an input path over its pin's setup budget (:func:`setup_budget_ns`:
GNT# is point-to-point and has more). :func:`margins` says how close a passing build is,
:func:`notes` what a failing one is still good for, :func:`bus_clock_max_mhz` the fastest
bus clock a build keeps up with, :func:`fits` whether it fits a part.
"""

import math

__all__ = ["check", "margins", "notes", "fits", "setup_budget_ns", "setup_slack_ns",
           "bus_clock_max_mhz", "PCI_SETUP_BUDGET_NS", "PCI_SETUP_BUDGET_NS_POINT_TO_POINT",
           "POINT_TO_POINT_INPUTS", "PCI_PERIOD_NS", "PCI_CLOCK_MAX_MHZ", "DEVICE_CAPACITY",
           "DATA_PATH_MAX_LUTS", "PCI_CLOCK_MHZ"]

#: The bus clock a build is constrained to and checked at unless it asks otherwise (MHz).
PCI_CLOCK_MHZ = 33

#: PCI's input setup budget (Tsu) at 33 and 66 MHz, ns: the bused signals'.
PCI_SETUP_BUDGET_NS = {33: 7.0, 66: 3.0}
#: The same for the point-to-point inputs (Tsu(ptp)): the arbiter's GNT# may come later
#: in the clock than a bused signal (Tval(ptp) up to 12 ns at 33 MHz against 11), and
#: PCI gives a device's GNT# input 10 ns of setup (66 MHz: 5 ns) where a bused input
#: gets 7 (3).
PCI_SETUP_BUDGET_NS_POINT_TO_POINT = {33: 10.0, 66: 5.0}
#: The PCI input pins (as ``input_paths`` names them) with the point-to-point budget.
POINT_TO_POINT_INPUTS = frozenset({"gnt"})
#: The period of the 33 MHz PCI clock, ns, and its frequency as reports give it (33.33).
PCI_PERIOD_NS = 30.0
PCI_CLOCK_MAX_MHZ = math.floor(100_000 / PCI_PERIOD_NS) / 100

#: ``{device: (LUTs, flip-flops, block RAMs)}`` as nextpnr models each part. nextpnr
#: models the LFE5U-12F with the 25F's die; Lattice rates the 12F at 12K LUTs and 32 block
#: RAMs, which is what a fit is judged against here.
DEVICE_CAPACITY = {
    "LFE5U-12F": (12_000, 12_000, 32),
    "LFE5U-25F": (24_288, 24_288, 56),
    "LFE5U-45F": (43_848, 43_848, 108),
    "LFE5U-85F": (83_640, 83_640, 208),
    "LFE5UM5G-85F": (83_640, 83_640, 208),
}

#: The most LUT levels the design puts between a live handshake pin and an AD output
#: register (the handshake selects among words computed in the clock before).
DATA_PATH_MAX_LUTS = 3


def fits(report, device):
    """Whether a build's usage (``luts``, ``ffs``, ``brams`` of its report: placed, or
    synthesised for ``--synth-only``) fits ``device`` (:data:`DEVICE_CAPACITY`)."""
    luts, ffs, brams = DEVICE_CAPACITY[device]
    return report["luts"] <= luts and report["ffs"] <= ffs and report["brams"] <= brams


def setup_budget_ns(pin, clock_mhz=PCI_CLOCK_MHZ):
    """The setup time PCI allows input ``pin`` (as ``input_paths`` names it: ``gnt``,
    ``ad[3]``) at ``clock_mhz``: GNT#'s point-to-point budget or the bused one."""
    budgets = (PCI_SETUP_BUDGET_NS_POINT_TO_POINT if pin in POINT_TO_POINT_INPUTS
               else PCI_SETUP_BUDGET_NS)
    return budgets[clock_mhz]


def setup_slack_ns(path, clock_mhz):
    """How much of its pin's setup budget (:func:`setup_budget_ns`) input path ``path``
    (an ``input_paths`` entry) leaves at ``clock_mhz``; below 0 it misses."""
    return setup_budget_ns(path["pin"], clock_mhz) - path["ns"] - path["setup_ns"]


def bus_clock_max_mhz(fmax_pci, input_paths):
    """The fastest PCI clock, up to 33.33 MHz, at which a build keeps its ``pci`` clock
    (``fmax_pci``) and every one of its ``input_paths``, data paths included, meets setup.

    Behind agents with PCI's 33 MHz timing an input is valid at a fixed time after the
    clock edge, whatever the period: the 30 ns period less the pin's setup budget
    (Tval + Tprop + Tskew: 23 ns on a bused line, 20 ns on GNT#). A path then needs a
    period of that time plus its own delay and setup. PCI devices work at any clock
    below their rating, so this is the clock a bus that can be slowed may run the build
    at with every input sampled in time (hold is not modelled; docs/timing.md).
    """
    period = max([PCI_PERIOD_NS] + [PCI_PERIOD_NS - setup_slack_ns(p, 33) for p in input_paths])
    return math.floor(min(fmax_pci, 1000 / period) * 100) / 100


def check(report, clock_mhz=PCI_CLOCK_MHZ):
    """What keeps a full build's report from meeting PCI at ``clock_mhz``: a list of
    one-line problems (empty when it meets the clock, registers every output, keeps every
    control input path inside its pin's setup budget, :func:`setup_budget_ns`, and every
    data path one handshake decision deep).

    Data paths (a live handshake pin to an AD line's output or tristate register: the
    word advances or is released in the clock the handshake is seen) are held to a logic
    depth, not to the budget: their delay is mostly wire from the handshake pin to the AD
    pin, and a connector that spreads AD around the die (the ULX3S header: over 100 tiles
    between IRDY# and AD[22]) sets it, not the design (docs/timing.md). :func:`notes`
    states their delay against the budget.

    A clock domain the board makes itself (``clocks_mhz``: the passive ULX3S's SDRAM
    clock) must reach its own frequency whatever ``clock_mhz`` is. An active 32-bit build
    must keep the cells its output timing depends on (:mod:`.ecp5.structure`).
    """
    problems = []
    if report["fmax_mhz"].get("pci", 0) < clock_mhz:
        problems.append(f"pci clock reaches {report['fmax_mhz'].get('pci')} MHz, "
                        f"not {clock_mhz} MHz")
    for domain, mhz in sorted(report.get("clocks_mhz", {}).items()):
        if report["fmax_mhz"].get(domain, 0) < mhz:
            problems.append(f"{domain} clock reaches {report['fmax_mhz'].get(domain)} MHz, "
                            f"not {mhz} MHz")
    if not report["outputs_registered"]:
        problems.append("some PCI outputs or output enables do not leave through I/O "
                        "registers")
    control = [p for p in report["input_paths"] if not p["data"]]

    def slack(path):
        return setup_slack_ns(path, clock_mhz)
    over = sorted((p for p in control if slack(p) < 0), key=slack)
    if over:
        worst = over[0]
        problems.append(f"{len(over)} of {len(control)} control input paths exceed their "
                        f"setup budget (worst: {worst['pin']} -> {worst['to']}, "
                        f"{round(worst['ns'] + worst['setup_ns'], 3)} ns against "
                        f"{setup_budget_ns(worst['pin'], clock_mhz)} ns)")
    deep = [p for p in report["input_paths"] if p["data"] and p["luts"] > DATA_PATH_MAX_LUTS]
    if deep:
        problems.append(f"{deep[0]['pin']} reaches {deep[0]['to']} through {deep[0]['luts']} "
                        f"LUTs (a data path may have {DATA_PATH_MAX_LUTS})")
    problems += report.get("structure_problems", [])
    return problems


def margins(report, clock_mhz=PCI_CLOCK_MHZ):
    """One line for a build that meets PCI at ``clock_mhz`` (:func:`check` finds nothing):
    how close it is, since a pass by picoseconds in nextpnr's model is not a pass by a
    margin on the board (docs/timing.md, "What the delays leave out"): the pci clock's
    headroom, the control input path with the least slack and the data paths' depth."""
    fmax = report["fmax_mhz"]["pci"]
    parts = [f"pci clock {fmax} MHz ({(fmax / clock_mhz - 1) * 100:+.1f} %)"]
    for domain, mhz in sorted(report.get("clocks_mhz", {}).items()):
        own = report["fmax_mhz"][domain]
        parts.append(f"{domain} clock {own} MHz of {mhz} ({(own / mhz - 1) * 100:+.1f} %)")
    control = [p for p in report["input_paths"] if not p["data"]]
    if control:
        tightest = min(control, key=lambda path: setup_slack_ns(path, clock_mhz))
        parts.append(f"tightest control input path {tightest['pin']} -> {tightest['to']}, "
                     f"{round(tightest['ns'] + tightest['setup_ns'], 3)} ns of "
                     f"{setup_budget_ns(tightest['pin'], clock_mhz)} "
                     f"({round(setup_slack_ns(tightest, clock_mhz), 3)} ns slack)")
    data = report["data_paths"]
    if data["count"]:
        parts.append(f"data paths at most {data['luts_max']} LUTs deep "
                     f"(of {DATA_PATH_MAX_LUTS})")
    return f"meets PCI at {clock_mhz} MHz: " + "; ".join(parts)


def notes(report, clock_mhz=PCI_CLOCK_MHZ):
    """Lines about the data paths' delay against the setup budget (see :func:`check`)
    and, where the build's inputs or clock are too slow for a 33 MHz bus, the bus clock
    it keeps up with (:func:`bus_clock_max_mhz`)."""
    budget = PCI_SETUP_BUDGET_NS[clock_mhz]
    data = report["data_paths"]
    lines = []
    if data["count"] and data["setup_ns_max"] > budget:
        worst = next(p for p in report["input_paths"] if p["data"])
        lines.append(f"data paths: {data['count']}, at most {data['luts_max']} LUTs deep, "
                     f"up to {data['setup_ns_max']} ns ({worst['pin']} -> {worst['to']}), "
                     f"over the {budget} ns budget by the pins' spread on this board "
                     "(docs/timing.md)")
    if report["bus_clock_max_mhz"] < PCI_CLOCK_MAX_MHZ:
        lines.append(f"on a bus clocked at up to {report['bus_clock_max_mhz']} MHz this "
                     "build samples every input in time and keeps its pci clock")
    return lines


