# SPDX-License-Identifier: BSD-2-Clause
"""PCI's timing, as a build's report must meet it: the budgets, the check and its words.

A PCI input is valid a fixed time after the clock edge, set by the *other* agents' speed
class, not by the bus clock: behind 33 MHz parts, Tval + Tprop + Tskew is 23 ns on a bused
line and 20 ns on GNT# (point to point); behind 66 MHz parts, 12 and 10 ns. An input path
of this board therefore has the period less that time to reach its flip-flop
(:func:`setup_budget_ns`: 7 and 10 ns at 33 MHz, 3 and 5 at 66, 17 and 20 at 25). PCI
components work at any clock up to their rating, so a build that misses 33 MHz still
works on a bus clocked slower; each board declares the bus clock its pin-out allows
(``BUS_CLOCK_MHZ`` of its pin-out module), and the active build is built, checked and
labelled (the ``id.config.bus_clock`` register) at that clock.

:func:`check` states what keeps a report (:mod:`.routed`) from meeting PCI at a bus clock
(``make timing``): the pci clock, a domain of ``clocks_mhz`` below its frequency, an output
or output enable outside its I/O register, an input path over its pin's setup budget
(every path, the AD data paths and enables included), an input path that changes at the
flip-flop before the clock reaches it (hold). :func:`margins` says how close a passing
build is, :func:`notes` what a failing one is still good for, :func:`bus_clock_max_mhz`
the fastest bus clock a build keeps up with, :func:`fits` whether it fits a part.
"""

import math

__all__ = ["check", "margins", "notes", "fits", "setup_budget_ns", "setup_slack_ns",
           "bus_clock_max_mhz", "bus_period_ns", "hold_problems", "valid_after_ns",
           "speed_class",
           "POINT_TO_POINT_INPUTS", "SPEED_CLASSES_MHZ", "DEVICE_CAPACITY",
           "CLOCK_MARGIN", "DATA_PATH_MAX_LUTS", "PCI_CLOCK_MHZ"]

#: The bus clock a build is constrained to and checked at unless its board or the caller
#: says otherwise (MHz).
PCI_CLOCK_MHZ = 33

#: PCI's speed classes, ``{class MHz: (fastest clock in MHz, {"bused": ns, "point_to_point":
#: ns})}``: the time after the clock edge at which the other agents' outputs are valid at
#: this board's pins (Tval + Tprop + Tskew; PCI LB 3.0 §4.2.3.2, §7.6.4: at 33 MHz a 30 ns
#: period less Tsu 7 ns, less Tsu(ptp) 10 ns for GNT#; at 66 MHz 15 ns less 3 and 5).
SPEED_CLASSES_MHZ = {
    33: (100 / 3, {"bused": 23.0, "point_to_point": 20.0}),
    66: (200 / 3, {"bused": 12.0, "point_to_point": 10.0}),
}
#: The PCI input pins (as ``input_paths`` names them) with the point-to-point budget.
POINT_TO_POINT_INPUTS = frozenset({"gnt"})

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

#: The headroom the pci clock must have over the bus clock by nextpnr's model (a
#: fraction): the model is worst-case for one placement of one speed grade, and leaves
#: out the input buffer and the clock network's insertion delay (docs/timing.md).
CLOCK_MARGIN = 0.05

#: The most logic levels (cells entered from general routing,
#: :func:`~.ecp5.floorplan.live_depths`) the design puts between a live handshake pin and
#: an AD output register (the handshake selects among words computed in the clock
#: before): the master's decision's slice pair, then the cell joining the target's AD.
#: The synthesised structure an active build is held to (:mod:`.ecp5.structure`).
DATA_PATH_MAX_LUTS = 2


def fits(report, device):
    """Whether a build's usage (``luts``, ``ffs``, ``brams`` of its report: placed, or
    synthesised for ``--synth-only``) fits ``device`` (:data:`DEVICE_CAPACITY`)."""
    luts, ffs, brams = DEVICE_CAPACITY[device]
    return report["luts"] <= luts and report["ffs"] <= ffs and report["brams"] <= brams


def speed_class(clock_mhz):
    """The speed class (33 or 66) a bus clocked at ``clock_mhz`` belongs to: the nominal
    clock a board reports and whether it is 66 MHz capable."""
    for speed, (fastest, _) in sorted(SPEED_CLASSES_MHZ.items()):
        if clock_mhz <= fastest + 0.01:
            return speed
    raise ValueError(f"no PCI bus runs at {clock_mhz} MHz (66.66 at most)")


def valid_after_ns(pin, clock_mhz=PCI_CLOCK_MHZ):
    """When input ``pin`` is valid at this board's pin after the clock edge, ns, on a bus
    clocked at ``clock_mhz`` (its agents' speed class: :data:`SPEED_CLASSES_MHZ`)."""
    kind = "point_to_point" if pin in POINT_TO_POINT_INPUTS else "bused"
    return SPEED_CLASSES_MHZ[speed_class(clock_mhz)][1][kind]


def setup_budget_ns(pin, clock_mhz=PCI_CLOCK_MHZ):
    """The setup time PCI leaves input ``pin`` (as ``input_paths`` names it: ``gnt``,
    ``ad[3]``) on a bus clocked at ``clock_mhz``: the period less :func:`valid_after_ns`
    (7 ns on a bused line and 10 on GNT# at 33 MHz, 3 and 5 at 66)."""
    return round(bus_period_ns(clock_mhz) - valid_after_ns(pin, clock_mhz), 3)


def bus_period_ns(clock_mhz):
    """The clock period of a bus at ``clock_mhz``; PCI's nominal 33 and 66 MHz are its
    speed classes' 30 and 15 ns (33.33 and 66.66 MHz)."""
    if clock_mhz in SPEED_CLASSES_MHZ:
        clock_mhz = SPEED_CLASSES_MHZ[clock_mhz][0]
    return 1000 / clock_mhz


def setup_slack_ns(path, clock_mhz):
    """How much of its pin's setup budget (:func:`setup_budget_ns`) input path ``path``
    (an ``input_paths`` entry) leaves at ``clock_mhz``; below 0 it misses."""
    return setup_budget_ns(path["pin"], clock_mhz) - path["ns"] - path["setup_ns"]


def bus_clock_max_mhz(fmax_pci, input_paths, speed=PCI_CLOCK_MHZ):
    """The fastest bus clock of speed class ``speed`` (:data:`SPEED_CLASSES_MHZ`: 33, the
    buses of 33 MHz parts users have, or 66) at which a build keeps its ``pci`` clock
    (``fmax_pci``) and every one of its ``input_paths`` meets setup: each path needs a
    period of :func:`valid_after_ns` plus its own delay and setup; 0 when the class's
    slowest clock is too fast (a 66 MHz class bus runs at 33.33 MHz at least)."""
    fastest, valid_after = SPEED_CLASSES_MHZ[speed]
    slowest = min((top for top, _ in SPEED_CLASSES_MHZ.values() if top < fastest),
                  default=0.0)
    kinds = ("point_to_point", "bused")
    period = max([1000 / fastest] +
                 [valid_after[kinds[p["pin"] not in POINT_TO_POINT_INPUTS]] + p["ns"] +
                  p["setup_ns"] for p in input_paths])
    mhz = math.floor(min(fmax_pci, 1000 / period, fastest) * 100) / 100
    return mhz if mhz > slowest else 0.0


def hold_problems(report):
    """The input paths that may change at their flip-flop before the clock edge that
    samples them reaches it: PCI guarantees an input 0 ns of hold at the pin, so a path's
    shortest delay (``min_ns``) must reach past the clock's arrival at the flip-flop
    (``clock_ns``) plus the flip-flop's own hold (``hold_ns``). Paths into the pins' own
    I/O-cell input registers are not input paths; those registers take the input delay
    Lattice specifies for zero hold (``SCLK_ZEROHOLD``, pcispy.platform.ecp5.iocell)."""
    return [p for p in report["input_paths"]
            if "min_ns" in p and p["min_ns"] < p["clock_ns"] + p["hold_ns"]]


def check(report, clock_mhz=PCI_CLOCK_MHZ):
    """What keeps a full build's report from meeting PCI on a bus clocked at ``clock_mhz``:
    a list of one-line problems, empty when the pci clock reaches ``clock_mhz`` with
    :data:`CLOCK_MARGIN` to spare, every
    PCI output and output enable leaves through its I/O register, every input path (the
    control paths and the data paths into AD's output and tristate registers alike: a
    late word is a wrong word, a late release is contention with the next driver) fits
    its pin's setup budget (:func:`setup_budget_ns`), and none misses hold
    (:func:`hold_problems`).

    A clock domain the board makes itself (``clocks_mhz``: the passive ULX3S's SDRAM
    clock) must reach its own frequency whatever ``clock_mhz`` is. An active 32-bit build
    must keep the cells its output timing depends on (:mod:`.ecp5.structure`).
    """
    problems = []
    needed = round(clock_mhz * (1 + CLOCK_MARGIN), 2)
    if report["fmax_mhz"].get("pci", 0) < needed:
        problems.append(f"pci clock reaches {report['fmax_mhz'].get('pci')} MHz, "
                        f"not {needed:g} MHz ({clock_mhz:g} MHz + "
                        f"{CLOCK_MARGIN * 100:g} %)")
    for domain, mhz in sorted(report.get("clocks_mhz", {}).items()):
        if report["fmax_mhz"].get(domain, 0) < mhz:
            problems.append(f"{domain} clock reaches {report['fmax_mhz'].get(domain)} MHz, "
                            f"not {mhz} MHz")
    if not report["outputs_registered"]:
        problems.append("some PCI outputs or output enables do not leave through I/O "
                        "registers")
    paths = report["input_paths"]

    def slack(path):
        return setup_slack_ns(path, clock_mhz)
    for kind, chosen in (("control", [p for p in paths if not p["data"]]),
                         ("data", [p for p in paths if p["data"]])):
        over = sorted((p for p in chosen if slack(p) < 0), key=slack)
        if over:
            worst = over[0]
            problems.append(f"{len(over)} of {len(chosen)} {kind} input paths exceed their "
                            f"setup budget (worst: {worst['pin']} -> {worst['to']}, "
                            f"{round(worst['ns'] + worst['setup_ns'], 3)} ns against "
                            f"{setup_budget_ns(worst['pin'], clock_mhz)} ns)")
    short = hold_problems(report)
    if short:
        worst = min(short, key=lambda p: p["min_ns"] - p["clock_ns"] - p["hold_ns"])
        problems.append(f"{len(short)} input paths miss hold (worst: {worst['pin']} -> "
                        f"{worst['to']}, {worst['min_ns']} ns against the clock's "
                        f"{worst['clock_ns']} ns + {worst['hold_ns']} ns hold)")
    problems += report.get("structure_problems", [])
    return problems


def margins(report, clock_mhz=PCI_CLOCK_MHZ):
    """One line for a build that meets PCI at ``clock_mhz`` (:func:`check` finds nothing):
    how close it is, since a pass by picoseconds in nextpnr's model is not a pass by a
    margin on the board (docs/timing.md, "What the delays leave out"): the pci clock's
    headroom and the input path with the least slack, of the control and of the data
    paths."""
    fmax = report["fmax_mhz"]["pci"]
    parts = [f"pci clock {fmax} MHz ({(fmax / clock_mhz - 1) * 100:+.1f} %)"]
    for domain, mhz in sorted(report.get("clocks_mhz", {}).items()):
        own = report["fmax_mhz"][domain]
        parts.append(f"{domain} clock {own} MHz of {mhz} ({(own / mhz - 1) * 100:+.1f} %)")
    for kind, data in (("control", False), ("data", True)):
        chosen = [p for p in report["input_paths"] if p["data"] == data]
        if chosen:
            tightest = min(chosen, key=lambda path: setup_slack_ns(path, clock_mhz))
            parts.append(f"tightest {kind} input path {tightest['pin']} -> {tightest['to']}, "
                         f"{round(tightest['ns'] + tightest['setup_ns'], 3)} ns of "
                         f"{setup_budget_ns(tightest['pin'], clock_mhz)} "
                         f"({round(setup_slack_ns(tightest, clock_mhz), 3)} ns slack)")
    return f"meets PCI at {clock_mhz} MHz: " + "; ".join(parts)


def notes(report, clock_mhz=PCI_CLOCK_MHZ):
    """Where a build's inputs or clock are too slow for a bus at ``clock_mhz``: the bus
    clock of the same speed class it does keep up with (:func:`bus_clock_max_mhz`)."""
    speed = speed_class(clock_mhz)
    keeps_up = bus_clock_max_mhz(report["fmax_mhz"].get("pci", 0.0), report["input_paths"],
                                 speed)
    # keeps_up is rounded down to 0.01 MHz: the nominal 33 is kept up with at 33.33.
    if keeps_up + 0.01 < 1000 / bus_period_ns(clock_mhz):
        if not keeps_up:
            return [f"this build keeps up with no bus of {speed} MHz parts"]
        return [f"on a bus of {speed} MHz parts clocked at up to {keeps_up} MHz this build "
                "samples every input in time and keeps its pci clock"]
    return []
