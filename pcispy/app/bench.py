# SPDX-License-Identifier: BSD-2-Clause
"""``make bench``: measure the project's speed and size figures into build/bench.json.

Each figure comes from a measurement function below, keyed by its dotted name (the names
the issues use, e.g. ``sim.empty_cycles_per_s``). A measurement that fails is recorded as
``{"error": ...}`` and makes the run exit non-zero, so a missing figure is never silent.
"""

import argparse
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
from amaranth.hdl import ClockDomain, DomainRenamer, Module
from amaranth.sim import Simulator
from rich.console import Console

from pcispy.app import demo
from pcispy.dma.dma_feature import dma
from pcispy.exerciser.pio_feature import pio
from pcispy.formal.run import measure as measure_formal
from pcispy.irq.irq_feature import irq_latency
from pcispy.platform.boards.ulx3s import BOARDS, SDRAM_CLOCK_MHZ
from pcispy.platform.build import build
from pcispy.platform.timing import check, fits
from pcispy.platform.top import sdram_clocking
from pcispy.sim.bfm.sdram import SDRAMModel, attach, violation_names
from pcispy.sim.launcher import run_feature, FIGURES_ENV
from pcispy.sim.session import FRESH_ENV, SESSIONS_ENV
from pcispy.sim.sidechannel import measure_bulk_read
from pcispy.sim.speed import (measure_bfm_cycles_per_s, measure_empty_cycles_per_s,
                              measure_idle_cycles_per_s)
from pcispy.sim.model import build_system
from pcispy.sim.system import SystemConfig
from pcispy.spy.capture_feature import capture, finish_capture, readout_rate, start_capture
from pcispy.spy.format import RecordKind, RAW_RECORD_BITS, SLOT_BITS, SUMMARY_RECORD_BITS
from pcispy.spy.sdram import SDRAMTiming, board_margins, SDRAMTraceMemory
from pcispy.trace.decode import measure_decode_speed, summarise, measure_decode_memory
from pcispy.trace.file import parse_trace, trace_bytes

__all__ = ["MEASUREMENTS", "main", "trace_depth", "idle_compression", "dma_throughput"]

#: The checkout this module lies in.
_REPOSITORY = Path(__file__).resolve().parents[2]


def _sim_empty():
    return {"sim.empty_cycles_per_s": round(measure_empty_cycles_per_s())}


def _sim_bfm():
    return {"sim.bfm_cycles_per_s": round(measure_bfm_cycles_per_s())}


def _sim_idle():
    return {"sim.idle_cycles_per_s": round(measure_idle_cycles_per_s())}


def _spy_decode():
    return {"spy.decode_cycles_per_s": round(measure_decode_speed())}


async def trace_depth(transport, *, limit=2.0):
    """A feature (run in the simulator): a summary capture of everything, triggered at arm,
    that runs until the trace memory is full (no --count), violations not stored, so that
    the memory holds the trigger event and transactions only. Its result's status holds
    the capacity register as read after the capture."""
    return await capture(transport, mode="summary", violations="none", limit=limit)


async def idle_compression(transport, *, seconds=0.004):
    """A feature (run in the simulator): a raw capture with idle compression for ``seconds``
    of bus time during which the tool touches no register (one sleep instead of status
    polls, which would be bus traffic of its own). Returns the capture's result and BAR0,
    whose accesses (the arm before the window, the stop after it) bound the window."""
    run = await start_capture(transport, mode="raw", idle_compress=True, violations="none")
    await transport.sleep(seconds)
    result = await finish_capture(run, timed_out=True)
    return dict(result, bar0=transport.bars[0], idle_window_s=seconds)


def _trace(result):
    return parse_trace(trace_bytes(base64.b64decode(result["records"]), result["metadata"]))


def _spy_trace():
    """spy.trace_depth_transactions: transaction summaries the default board's trace memory
    held when a summary capture of the rtc scenario (clock ticks, retries, background DMA,
    the capture's own status polls) ran until the memory was full; spy.trace_capacity_records:
    the capacity register, which the records held (the summaries and the trigger event) must
    equal (2047 summaries and the trigger event in 2048 records, measured). Violations are
    not stored, so that only transactions take the room.

    spy.idle_compression_ratio: bus clocks per raw record stored with idle compression over
    the rtc scenario (its clock ticks and background DMA), in a window of 4 ms of bus time
    in which the tool touches no register: from the end of start_capture's last read to
    the address phase of the stop write (86.2: 132043 clocks in 1532 records, measured).
    The capture feature's own status polls (two BAR0 reads every 0.5 ms) would be stored
    too, so the window waits by one sleep instead of polling."""
    full = run_feature(trace_depth, profile="rtc")
    if full["status"]["state"] != "done" or full.get("limit_reached"):
        raise RuntimeError(f"the summary capture did not fill the memory: {full['status']}")
    held = _trace(full)
    capacity = full["status"]["capacity"]
    if full["records_count"] != capacity:
        raise RuntimeError(f"the full memory held {full['records_count']} records, the "
                           f"capacity register says {capacity}")
    raw = run_feature(idle_compression, profile="rtc")
    if raw["status"]["count"] >= raw["status"]["capacity"]:
        raise RuntimeError("the raw capture filled the memory: the window is cut short")
    trace = _trace(raw)
    bar0 = raw["bar0"]
    # The window: from the end of the last register access start_capture made (it reads
    # status and capacity after the arm) to the address phase of the stop write, the first
    # BAR0 access after the sleep (still in flight when the capture stops: no summary).
    summaries = summarise(trace)
    ours = summaries[(summaries["address"] >= bar0["address"]) &
                     (summaries["address"] < bar0["address"] + bar0["size"])]
    begin = int(ours["timestamp"][-1]) + int(ours["duration"][-1])
    raw_at = trace.indices(RecordKind.RAW)
    times = trace.times()[raw_at]
    bus = trace.columns(RecordKind.RAW, ["bus.frame", "bus.ad"])
    frame = bus["bus.frame"].astype(bool)
    address_phase = frame & ~np.concatenate([[False], frame[:-1]])
    to_bar0 = (bus["bus.ad"] >= bar0["address"]) & (bus["bus.ad"] < bar0["address"] +
                                                       bar0["size"])
    later = times[address_phase & to_bar0 & (times > begin)]
    if not len(later):
        raise RuntimeError("the stop write is not in the raw capture")
    end = int(later[0])
    expected = round(raw["idle_window_s"] * raw["metadata"]["clock_mhz"] * 1e6)
    if not expected <= end - begin < expected + 5000:
        raise RuntimeError(f"the window is {end - begin} clocks, the sleep {expected}")
    stored = int(np.count_nonzero((times >= begin) & (times < end)))
    return {"spy.trace_depth_transactions": len(held.indices(RecordKind.SUMMARY)),
            "spy.trace_depth_records": full["records_count"],
            "spy.trace_capacity_records": capacity,
            "spy.idle_compression_ratio": round((end - begin) / stored, 1),
            "spy.idle_compression_clocks": end - begin,
            "spy.idle_compression_records": stored}


class _SleepTimer:
    """A transport that times the simulator while the feature sleeps (the DMA runs)."""

    def __init__(self, inner):
        self.inner = inner
        self.wall = 0.0
        self.clocks = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def sleep(self, seconds):
        begin_clock, begin = await self.inner.system.cycle(), time.perf_counter()
        await self.inner.sleep(seconds)
        self.wall += time.perf_counter() - begin
        self.clocks += await self.inner.system.cycle() - begin_clock


async def dma_throughput(transport, *, width):
    """A feature (run in the simulator): 1 MiB on the ideal host, burst 256: MW and MRM on
    a 32-bit system, MW 64-bit on a 64-bit one; the simulated clocks per second while the
    engine runs (Python sleeping) during the MW run."""
    figures = {}
    for cmd in ("MW",) if width == 64 else ("MW", "MRM"):
        timed = _SleepTimer(transport)
        result = await dma(timed, cmd=cmd, length=1 << 20, burst=256, width=width,
                           verify=cmd == "MRM")
        if result["error"] is not None or not result["checked"] or result["mismatches"] or \
                result["bytes"] != result["length"] * result["passes"]:
            raise RuntimeError(f"{cmd} 1 MiB, {width}-bit: {result}")
        figures[f"dma.{cmd.lower()}_mbps_{width}"] = result["mbps"]
        if cmd == "MW":
            # Only while the engine runs and Python sleeps: the buffer fill and check
            # through the backdoor are Python's time, not the simulator's.
            figures["sim.dma_cycles_per_s"] = timed.clocks / timed.wall
    return figures


def _dma():
    """dma.mw_mbps_32, dma.mrm_mbps_32, dma.mw_mbps_64 (ideal host, burst 256, 1 MiB) and
    sim.dma_cycles_per_s (during the 32-bit MW run): :func:`dma_throughput`."""
    figures = {}
    for width in (32, 64):
        measured = run_feature(dma_throughput, {"width": width}, SystemConfig(width=width),
                               profile="ideal")
        checker = measured.pop("checker")
        if checker["violations"] or checker["drivers"] or checker["contention"]:
            raise RuntimeError(f"the {width}-bit DMA broke bus rules: {checker}")
        if width == 64:
            measured.pop("sim.dma_cycles_per_s")
        figures.update({name: round(value, 2) for name, value in measured.items()})
    return figures


def _irq():
    """irq.sim_handler_{median,p98}_us and irq.sim_user_{median,p98}_us (``pcispy irq
    --count 200`` on the ideal profile: responder delay uniform 100..400 clocks) and
    irq.sim_interrupts_per_s (wall clock, simulator start included, build excluded)."""
    config = SystemConfig(width=32)
    build_system(config)
    start = time.perf_counter()
    result = run_feature(irq_latency, {"count": 200}, config)
    elapsed = time.perf_counter() - start
    figures = {f"irq.sim_{key}_{stat}_us": result[key]["us"][stat]
               for key in ("handler", "user") for stat in ("median", "p98")}
    figures["irq.sim_interrupts_per_s"] = round(result["count"] / elapsed, 1)
    return figures


def _build_figures(board, *, passive=False, bus_clock_mhz=None):
    """``{figure: value}`` of a full build of ``board`` (place and route, the build ``make
    timing`` checks, reused while the design is unchanged) at the bus clock it is for
    (``bus_clock_mhz``, default the board's: :func:`~pcispy.platform.build.bus_clock_for`):
    the clock, the pci clock it reaches, the fastest bus clock at which it samples every
    input in time, the worst input setup (every path, control, data), the worst hold
    slack, usage and whether it fits the 25F and 45F, outputs in I/O registers, whether
    it meets PCI at its bus clock (:func:`~pcispy.platform.timing.check` finds nothing),
    what synthesis broke of the structure its timing needs (:mod:`pcispy.platform.ecp5.
    structure`), the router's overuse (its congestion: the most wires overused at once
    and the iterations or arcs it took), and the time of synthesis and of place and
    route. A design that does not fit its part or breaks that structure fails the bench."""
    report = build(board, passive=passive, bus_clock_mhz=bus_clock_mhz)
    if not fits(report, report["device"]) or report.get("structure_problems"):
        raise RuntimeError(f"{board} does not fit the {report['device']} ({report['luts']} "
                           f"LUTs, {report['brams']} block RAMs) or its synthesis broke: "
                           f"{report.get('structure_problems')}")
    clock = report["bus_clock_mhz"]
    return {"bus_clock_mhz": clock,
            "fmax_pci_mhz": report["fmax_mhz"]["pci"],
            "fmax_sync_mhz": report["fmax_mhz"].get("sync"),
            "bus_clock_max_mhz": report["bus_clock_max_mhz"],
            "decode": report["decode"],
            "input_paths": len(report["input_paths"]),
            "input_setup_ns_max": report["input_setup_ns_max"],
            "input_setup_ns_max_control": report["input_setup_ns_max_control"],
            "data_paths": report["data_paths"],
            "input_hold_slack_ns_min": report.get("input_hold_slack_ns_min"),
            "luts": report["luts"], "ffs": report["ffs"], "brams": report["brams"],
            "outputs_registered": report["outputs_registered"],
            "fits_25f": fits(report, "LFE5U-25F"), "fits_45f": fits(report, "LFE5U-45F"),
            "meets_bus_clock": not check(report, clock),
            "problems": check(report, clock),
            "structure_problems": report.get("structure_problems"),
            "routing": report.get("routing"),
            "synthesis_s": report["seconds"].get("synthesis"),
            "place_and_route_s": report["seconds"].get("place_and_route")}


def _prefixed(prefix, figures):
    return {prefix + name: value for name, value in figures.items()}


#: Measurement functions; each returns ``{figure name: value}``.
def _board():
    """board.ulx3s_85f.*: the default board's active build at the bus clock its header
    pin-out allows (:func:`_build_figures`)."""
    return _prefixed("board.ulx3s_85f.", _build_figures("ulx3s-85f"))


def _board_passive():
    """board.ulx3s_85f_passive.*: the passive build (the spy and the checker, no PCI
    output driver) at 33 MHz and at 66 (``make timing CLOCK=66 ARGS=--passive``)
    (:func:`_build_figures`; it has no input path but the pins' own registers)."""
    return {**_prefixed("board.ulx3s_85f_passive.", _build_figures("ulx3s-85f", passive=True)),
            **_prefixed("board.ulx3s_85f_passive_66.",
                        _build_figures("ulx3s-85f", passive=True, bus_clock_mhz=66))}


def _board_pci_card():
    """board.pci_card_85f.*: the reference PCI card's active build at 33 MHz, the bus on
    one edge of the die (:func:`_build_figures`)."""
    return _prefixed("board.pci_card_85f.", _build_figures("pci-card-85f"))


def _board_64bit_synthesis():
    """board.ecp5_evn.synth_*: the ECP5-5G EVN's 64-bit design through synthesis (its
    smoke build, out of make test for its five minutes of one core): LUTs, flip-flops,
    block RAMs and whether they fit its part, the LFE5UM5G-85F (a design that does not fit
    fails the bench)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = build("ecp5-evn", synth_only=True, build_dir=tmp)
    if not fits(report, "LFE5UM5G-85F"):
        raise RuntimeError(f"the 64-bit design does not fit the LFE5UM5G-85F: "
                           f"{report['luts']} LUTs, {report['brams']} block RAMs")
    prefix = "board.ecp5_evn.synth_"
    return {prefix + "luts": report["luts"], prefix + "ffs": report["ffs"],
            prefix + "brams": report["brams"], prefix + "fits": True}


def _target_pio():
    """target.pio_write_mbps, target.pio_read_mbps: ``pcispy pio --size 64K --burst 64``
    on the ideal profile, 32-bit at 33 MHz (goals >= 120 and >= 110), with the simulated
    systems' medium decode; target.slow_decode.pio_*_mbps: the same with the bitstreams'
    slow decode (one clock more per transaction)."""
    figures = {}
    for decode, prefix in (("medium", "target."), ("slow", "target.slow_decode.")):
        result = run_feature(pio,
                             {"size": 64 * 1024, "burst": 64, "width": 32},
                             SystemConfig(width=32, decode=decode), profile="ideal")
        if result["errors"]:
            raise RuntimeError(f"PIO ({decode} decode) read back {result['errors']} "
                               "wrong DWORDs")
        figures.update({prefix + "pio_write_mbps": result["write_mbps"],
                        prefix + "pio_read_mbps": result["read_mbps"]})
    return figures


def _sim_session():
    """sim.session.start_s: ``pcispy sim start`` (elaboration, simulator start,
    enumeration; the model already built); sim.session.warm_pio_s: ``pcispy --json pio``
    after ``pcispy target --initial-wait 4`` on that session, wall clock of the whole
    command (the interpreter's start included), the issue's goal under 3 s;
    sim.session.warm_info_s: ``pcispy info`` likewise (the overhead: a few register
    reads). Each command is a process of its own, as a user types it; the session lives
    in a sessions folder of its own and is stopped afterwards."""
    build_system(SystemConfig())                 # a model build is not a session's start
    with tempfile.TemporaryDirectory(prefix="pss", dir="/tmp") as root:
        env = dict(os.environ, **{SESSIONS_ENV: root})
        env.pop(FRESH_ENV, None)

        def timed(*argv):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pcispy.app.cli", *argv], env=env,
                                  capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"pcispy {' '.join(argv)}: {done.stderr.strip()}")
            return time.perf_counter() - start, done.stdout
        try:
            start_s, _ = timed("sim", "start")
            timed("target", "--initial-wait", "4")
            pio_s, out = timed("--json", "pio")
            if json.loads(out)["write"]["first_data_clocks"] != 6:
                raise RuntimeError("the session lost the target's initial wait")
            info_s, _ = timed("info")
        finally:
            subprocess.run([sys.executable, "-m", "pcispy.app.cli", "sim", "stop"], env=env,
                           capture_output=True)
    return {"sim.session.start_s": round(start_s, 2), "sim.session.warm_pio_s": round(pio_s, 2),
            "sim.session.warm_info_s": round(info_s, 2)}


#: The commands a newcomer types from the README whose wall time ``make bench`` records
#: on a warm session (``sim.command.<name>_s``): each runs once to start its session, then
#: is timed.
SIM_COMMANDS = {
    "rtc_capture": ("--sim=rtc", "capture", "--mode", "summary", "--filter", "io:0x70/0xfffe",
                    "-o", "{tmp}/rtc.pcitrace"),
    "irq_2000": ("irq", "--count", "2000", "--hist", "{tmp}/irq.png"),
    "report_quick": ("--sim=alphastation200", "report", "--quick", "-o", "{tmp}/as200"),
}


def sim_command(name, folder, run):
    """The command line of :data:`SIM_COMMANDS` ``name`` for its ``run``-th run: its files
    go to a folder of their own under ``folder`` (made here), as a capture never
    overwrites one."""
    out = os.path.join(folder, f"{name}-{run}")
    os.makedirs(out, exist_ok=True)
    return [arg.format(tmp=out) for arg in SIM_COMMANDS[name]]


def _sim_commands():
    """sim.first_build_32_s: the 32-bit system model built from an empty model cache
    (elaboration, Verilator, the C++ compile: what a newcomer's first ``--sim`` command
    waits for); sim.command.<name>_s: each command of :data:`SIM_COMMANDS`, wall clock of
    the whole process on a warm session (the second of two runs, the first started the
    session)."""
    figures = {}
    with tempfile.TemporaryDirectory(prefix="pcispy-bench-") as tmp:
        env = dict(os.environ, PCISPY_BUILD=os.path.join(tmp, "build"))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from pcispy.sim.model import build_system; "
                        "build_system()"], env=env, check=True)
        figures["sim.first_build_32_s"] = round(time.perf_counter() - start, 1)
    build_system(SystemConfig())
    with tempfile.TemporaryDirectory(prefix="pss", dir="/tmp") as tmp:
        env = dict(os.environ, **{SESSIONS_ENV: tmp})
        env.pop(FRESH_ENV, None)
        try:
            for name in SIM_COMMANDS:
                for run in range(2):
                    argv = sim_command(name, tmp, run)
                    start = time.perf_counter()
                    done = subprocess.run([sys.executable, "-m", "pcispy.app.cli", *argv],
                                          env=env, capture_output=True, text=True)
                    if done.returncode:
                        raise RuntimeError(f"pcispy {' '.join(argv)}: {done.stderr.strip()}")
                figures[f"sim.command.{name}_s"] = round(time.perf_counter() - start, 2)
        finally:
            subprocess.run([sys.executable, "-m", "pcispy.app.cli", "sim", "stop"], env=env,
                           capture_output=True)
    return figures


def _demo():
    """demo.wall_s: ``make demo`` (quick sizes, five host bridges), wall clock, in all;
    demo.model_s of it preparing the simulated 64-bit system (elaboration, and on a fresh
    clone or after a gateware change the model build); demo.step1_s..step5_s per step."""
    with tempfile.TemporaryDirectory() as output:
        args = demo.build_parser().parse_args(["-o", output])
        context = demo.run(args, Console(file=io.StringIO(), width=200))
    figures = {"demo.wall_s": round(context["seconds"], 1),
               "demo.model_s": round(context["model_seconds"], 1)}
    figures.update({f"demo.step{n}_s": round(s, 1)
                    for n, s in enumerate(context["step_seconds"], 1)})
    return figures


def _uart():
    """uart.bulk_read_bytes_per_bit: payload bytes per bit time of BULK_READs of BAR1 over
    the UART side channel, measured in the simulated side channel (real gateware, two
    clock domains, 4 clocks per bit) and computed from the frames' wire bits;
    uart.bulk_read_kbytes_per_s_3mbaud: the measured figure at 3 Mbaud."""
    figures = measure_bulk_read()
    return {"uart.bulk_read_bytes_per_bit": round(figures["measured"], 4),
            "uart.bulk_read_bytes_per_bit_computed": round(figures["computed"], 4),
            "uart.bulk_read_kbytes_per_s_3mbaud": round(figures["measured"] * 3e6 / 1e3, 1)}


#: Seeds a system of the compliance regression make bench runs (make test-long's too).
FUZZ_SEEDS = 40


def _fuzz():
    """fuzz.transactions_checked: bus transactions of the compliance regression's whole
    fixed seed set (:data:`FUZZ_SEEDS` a system, every system: both widths, medium and slow
    decode; make test runs the first few of each) whose board summary equals the software
    decoder's; fuzz.seeds, fuzz.wall_s (the regression's run, models built
    beforehand). The regression is the test suite's (pcispy/sim/tests/test_compliance.py,
    which writes its counts into the folder :data:`FIGURES_ENV` names), so this figure is
    measured in a checkout of the repository, like make test."""
    regression = _REPOSITORY / "pcispy" / "sim" / "tests" / "test_compliance.py"
    if not regression.exists():
        raise RuntimeError(f"{regression} is missing: the compliance figures are measured "
                           "in a checkout of the repository")
    for width in (32, 64):
        for decode in ("medium", "slow"):
            build_system(SystemConfig(width=width, decode=decode))
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:xdist", str(regression)], cwd=_REPOSITORY, check=True,
                       env=dict(os.environ, **{FIGURES_ENV: folder,
                                               "PCISPY_SEEDS": str(FUZZ_SEEDS)}))
        wall = time.perf_counter() - start
        counts = [json.loads(path.read_text()) for path in Path(folder).glob("*.json")]
    return {"fuzz.transactions_checked": sum(c["transactions_checked"] for c in counts),
            "fuzz.seeds": sum(c["seeds"] for c in counts), "fuzz.wall_s": round(wall, 1)}


def _formal():
    """formal.properties_proved, formal.properties_bounded, formal.induction_depths,
    formal.covers_reached, formal.seconds: every job of pcispy.formal.JOBS
    (make formal)."""
    return measure_formal()


#: The clocks of the SDRAM bench: the passive ULX3S's PCI clock and SDRAM clock (MHz).
SDRAM_BENCH_PCI_MHZ = 100 / 3
#: PCI clocks of each load trial of :func:`_spy_sdram` (120 us: 15 refreshes and, at the
#: loads found, 24 rows).
SDRAM_BENCH_WINDOW = 4000


def _spy_sdram():
    """spy.trace_depth_records.ulx3s_sdram.summary / .raw: records the ULX3S's 32 MB SDRAM
    holds as trace memory (its 2**21 16-byte slots over the slots per record: summaries
    take two, raw records one).

    The rest, as :func:`_sdram_figures` measures them: ``spy.sdram_*`` for the passive
    ULX3S as it is built by default (the SDRAM on the 33 MHz PCI clock), and
    ``spy.sdram_*.pll_110mhz`` for the build with the SDRAM on its own clock
    (``--sdram-clock``, ``SDRAM_CLOCK_MHZ``, docs/sdram.md), with that build's PLL
    (BoardTop's ``sdram_clocking``, the one the build makes): ``spy.sdram_pll`` (its
    dividers and the SDRAM clock pin's phase settings), ``spy.sdram_clock_phase_deg``
    (that phase after the controller's clock) and ``spy.sdram_read_margin_ns`` /
    ``spy.sdram_command_margin_ns`` (the smaller side of the read data's window around
    its sampling edge and of the commands' setup and hold, for the assumed board round
    trip: pcispy/spy/sdram.py ``board_margins``)."""
    slots = 1 << SDRAMTiming.for_clock(SDRAM_BENCH_PCI_MHZ).slot_bits
    figures = {"spy.trace_depth_records.ulx3s_sdram.summary":
               slots * SLOT_BITS // SUMMARY_RECORD_BITS,
               "spy.trace_depth_records.ulx3s_sdram.raw": slots * SLOT_BITS // RAW_RECORD_BITS}
    figures.update(_sdram_figures(None))
    pll = _sdram_figures(SDRAM_CLOCK_MHZ)
    oscillator_mhz = BOARDS["ulx3s-85f"]().default_clk_frequency / 1e6
    dividers, phase, timing = sdram_clocking(oscillator_mhz, SDRAM_CLOCK_MHZ)
    cphase, fphase = phase.settings((dividers.clkop - 1) // 2)
    _, read, command = board_margins(SDRAM_CLOCK_MHZ, timing.cas_latency, phase.fraction)
    pll.update({
        "spy.sdram_pll": (f"CLKI_DIV {dividers.clki}, CLKFB_DIV {dividers.clkfb}, CLKOP_DIV "
                          f"{dividers.clkop} (VCO {dividers.vco_mhz:g} MHz); CLKOS_DIV "
                          f"{dividers.clkop}, CLKOS_CPHASE {cphase}, CLKOS_FPHASE {fphase}"),
        "spy.sdram_clock_phase_deg": round(phase.degrees, 1),
        "spy.sdram_read_margin_ns": round(read, 2),
        "spy.sdram_command_margin_ns": round(command, 2)})
    figures.update({f"{name}.pll_{SDRAM_CLOCK_MHZ}mhz": value for name, value in pll.items()})
    return figures


def _sdram_figures(sdram_mhz):
    """The SDRAM trace memory's figures with the controller and the SDRAM model on the PCI
    clock (``sdram_mhz`` None) or on a clock of their own of ``sdram_mhz``, measured in
    Amaranth's simulator: the trace memory's port on a 33 MHz PCI clock, the data sheet's
    timing at the SDRAM's clock, row changes and refreshes included, behind a 16-slot FIFO
    (so the figures are what the SDRAM sustains, not what the board's 256-slot FIFO absorbs
    in a burst; on a clock of its own the board's FIFO, pcispy/spy/async_fifo.py):

    - spy.sdram_clock_mhz: the SDRAM's clock.

    - spy.sdram_write_mbps: a slot offered every PCI clock (533 MB/s) for 6000 clocks;
      the slots taken from the first time the FIFO is full to the end x 16 bytes / time.
    - spy.sdram_raw_load_pct: the largest share of PCI clocks (whole per cent) producing a
      raw record each, evenly spread, that a 4000-clock window writes without the FIFO
      filling once (a binary search).
    - spy.sdram_summary_load_pct / spy.sdram_summary_rate_per_s: the same for summaries
      (two slots on consecutive clocks per transaction), in per cent of the densest legal
      transaction rate (one each two PCI clocks: address and single data phase, fast
      back-to-back) and in summaries per second.
    """
    pci_mhz, window = SDRAM_BENCH_PCI_MHZ, SDRAM_BENCH_WINDOW
    own_clock = sdram_mhz is not None
    sdram_mhz = sdram_mhz if own_clock else pci_mhz
    # A small part (fewer rows) measures the same: rows change every 64 slots anyway.
    timing = SDRAMTiming.for_clock(sdram_mhz, row_bits=4)
    m = Module()
    model = SDRAMModel(**timing.model_args())
    if own_clock:
        m.domains.sdram = ClockDomain("sdram")
        m.submodules.ctrl = ctrl = SDRAMTraceMemory(timing, fifo_depth=16, domain="sdram")
        m.submodules.model = DomainRenamer("sdram")(model)
    else:
        m.submodules.ctrl = ctrl = SDRAMTraceMemory(timing, fifo_depth=16)
        m.submodules.model = model
    attach(m, model, ctrl.sdram)
    port = ctrl.mem
    fill_clocks = 6000
    result = {}

    async def drain(ctx):
        while ctx.get(ctrl.level):
            await ctx.tick()
        for _ in range(4):
            await ctx.tick()

    async def trial(ctx, slot_at):
        """Whether the FIFO never fills while a slot is offered at each clock ``i`` of
        the window for which ``slot_at(i)``."""
        await drain(ctx)
        fills = ctx.get(ctrl.fills)
        for i in range(window):
            ctx.set(port.w_en, slot_at(i))
            ctx.set(port.w_addr, i)
            await ctx.tick()
        ctx.set(port.w_en, 0)
        return ctx.get(ctrl.fills) == fills

    async def largest(ctx, slot_at):
        """The largest whole per cent p (of 100) for which ``slot_at(i, p)`` passes."""
        good, bad = 0, 101
        while bad - good > 1:
            middle = (good + bad) // 2
            if await trial(ctx, lambda i: slot_at(i, middle)):
                good = middle
            else:
                bad = middle
        return good

    def evenly(i, rate):
        # One event at each clock where the running count of `rate` per clock steps.
        return int((i + 1) * rate) > int(i * rate)

    async def bench(ctx):
        while not ctx.get(ctrl.ready):
            await ctx.tick()
        taken, full_at = 0, None
        ctx.set(port.w_en, 1)
        for i in range(fill_clocks):
            ctx.set(port.w_addr, i)
            ready = ctx.get(port.w_ready)
            if not ready and full_at is None:
                full_at, taken = i, 0
            taken += ready
            await ctx.tick()
        ctx.set(port.w_en, 0)
        result["write"] = (taken, fill_clocks - full_at)
        result["raw"] = await largest(ctx, lambda i, pct: evenly(i, pct / 100))
        # A transaction starts where the rate steps and writes its second slot the
        # next clock; at most one each two clocks (the densest legal rate).
        result["summary"] = await largest(
            ctx, lambda i, pct: evenly(i, pct / 200) or (i > 0 and evenly(i - 1, pct / 200)))
        result["flags"] = ctx.get(model.flags)

    sim = Simulator(m)
    sim.add_clock(1e-6 / pci_mhz)
    if own_clock:
        sim.add_clock(1e-6 / sdram_mhz, domain="sdram")
    sim.add_testbench(bench)
    sim.run()
    if result["flags"]:
        raise RuntimeError(f"the SDRAM model saw {violation_names(result['flags'])}")
    taken, clocks = result["write"]
    return {"spy.sdram_clock_mhz": round(sdram_mhz, 2),
            "spy.sdram_write_mbps": round(taken * SLOT_BITS // 8 * pci_mhz / clocks, 1),
            "spy.sdram_raw_load_pct": result["raw"],
            "spy.sdram_summary_load_pct": result["summary"],
            "spy.sdram_summary_rate_per_s": round(result["summary"] / 100 * pci_mhz * 1e6 / 2)}


def _spy_readout():
    """spy.readout_mbps.bar1: MB/s of bus time of a streaming readout of a full trace memory
    (4096 raw records of the simulated board, 64 KiB) out of BAR1 into a file, the host
    bridge reading in Memory Read Multiple bursts: bytes over the board's clock counter
    before and after the readout (pcispy/spy/capture_feature.py readout_rate)."""
    with tempfile.TemporaryDirectory() as directory:
        rate = run_feature(readout_rate, {"path": str(Path(directory) / "rate.pcitrace")})
    seconds = rate["clocks"] / rate["clock_hz"]
    return {"spy.readout_mbps.bar1": round(rate["bytes"] / seconds / 1e6, 1)}


def _spy_decode_memory():
    """spy.decode_peak_mb.{raw_2m,summary_1m,one_record}, spy.decode_seconds.* (wall
    clock), spy.decode_cpu_seconds.*: `pcispy decode --format csv` of a synthetic raw trace
    of 2,000,000 records, a summary trace of 1,000,000 and one of a single record (the
    command's own footprint), each in a child process (pcispy/trace/decode.py
    measure_decode_memory)."""
    with tempfile.TemporaryDirectory() as directory:
        return measure_decode_memory(directory)


MEASUREMENTS = [_sim_empty, _sim_bfm, _sim_idle, _spy_decode, _spy_trace, _dma, _irq, _board,
                _board_passive, _board_pci_card, _board_64bit_synthesis, _target_pio,
                _sim_session, _sim_commands, _demo,
                _uart, _fuzz, _formal,
                _spy_sdram, _spy_readout, _spy_decode_memory]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="pcispy-bench", description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="build/bench.json")
    parser.add_argument("--only", help="run only measurements whose name contains this")
    args = parser.parse_args(argv)
    figures, failed = {}, []
    for measure in MEASUREMENTS:
        name = measure.__name__.lstrip("_")
        if args.only and args.only not in name:
            continue
        start = time.perf_counter()
        try:
            figures.update(measure())
        except Exception as error:   # recorded, reported, and fails the run
            traceback.print_exc()
            figures[f"{name}.error"] = f"{type(error).__name__}: {error}"
            failed.append(name)
        print(f"bench: {name} took {time.perf_counter() - start:.1f} s", file=sys.stderr)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    print(json.dumps(figures, indent=2, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
