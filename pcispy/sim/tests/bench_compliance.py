# SPDX-License-Identifier: BSD-2-Clause
"""The randomised compliance regression: every agent of the simulated system at once.

For each seed, one simulator process (the seeds come from ``PCISPY_SEED_LIST``):

- a random host-memory profile, a random test-device target profile, random settings of
  the board's exerciser target (``pcispy target`` code), a random forced GNT# removal and
  where the arbiter parks the bus (the board in half the seeds);
- three coroutines at once: the host bridge's PIO (BAR2 scratch RAM with 32/64-bit
  phases and partial byte enables, BAR3 I/O, the legacy RTC, the target-abort range), the
  board's DMA engine (``pcispy dma`` code: random command, length, burst, idle, pattern;
  written data checked, reads verified by the engine) into host memory or into the test
  device, and the test device mastering host memory and the board's BAR2;
- every byte accounted for: scoreboards of host memory (DMA buffers with guard bytes and
  the test device's range), of the test device's memory, of the board's scratch RAMs
  (backdoor), every read compared, the DMA engine's byte count exact and its verifier's
  mismatch count 0;
- the same traffic replayed twice (every random behaviour reseeded), captured raw and as
  spy summaries: the board's summaries equal the software decoder's, record for record;
- the protocol checker clean except for the rules the profiles in use break on purpose,
  and the resolver's driver rules (turnaround, s/t/s release, parking, PAR's driver)
  clean.

With the board behind the PCI-to-PCI bridge (``SystemConfig(bridge=True)``) the same
traffic crosses it (the host's and the test device's PIO downstream, the board's DMA
upstream), the spy watches the board's own bus, and that bus's checker and resolver must
be clean too. A write into the board's target-abort range is posted by the bridge, so the
host sees it complete (the abort ends the bridge's own write of it).

Every failure message starts with ``seed N``. Run by pcispy/sim/tests/test_compliance.py.
"""

import json
import os
import random
from dataclasses import dataclass, field

import cocotb
from cocotb.triggers import SimTimeoutError, gather, with_timeout

from pcispy.dma.dwords import pattern_dwords
from pcispy.pci.bus import Command
from pcispy.board.registers import REGISTER_MAP
from pcispy.host.board import Board
from pcispy.trace.decode import summarise
from pcispy.spy.capture_feature import finish_capture, start_capture
from pcispy.dma.dma_feature import PATTERNS, dma
from pcispy.exerciser.target_feature import target
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.initiator_control import Outcome
from pcispy.sim.bfm.legacy_ports import RTC_PORT
from pcispy.sim.bfm.profiles import PROFILES, RTC
from pcispy.sim.compliance import (Scoreboard, ScratchBackdoor, SharedInitiator,
                                   random_board_response)
from pcispy.sim.launcher import RESULT_ENV
from pcispy.sim.system import BOARD_SLOT, MASTERS
from pcispy.sim.transport import SimTransport
from pcispy.sim.tests.bench_bfm import TEST_IO, TEST_IO_SIZE, TEST_MEM, TEST_MEM_SIZE, \
    _random_profile
from pcispy.spy.tests.bench_spy import COMPARED, _exclude_bar0, _not_board_regs, _trace

#: The seeds of one run (a JSON list), set by the pytest wrapper.
SEED_LIST_ENV = "PCISPY_SEED_LIST"

#: BAR2 offsets (base, size): the host's range, the test device's range; the
#: target-abort range (first, last).
HOST_RANGE = (0x000, 0x200)
DEVICE_RANGE = (0x200, 0x200)
ABORT_RANGE = (0x400, 0x4FF)
#: Bytes of BAR2's scratch RAM the scoreboard covers (the ranges above).
SCRATCH_CHECKED = 0x500
#: Longest DMA run, bytes.
DMA_MAX_LENGTH = 256
#: Host memory (base, size): where the DMA buffer lands (the transport hands out buffers
#: from 0 on), with guard bytes after it; the test device's range.
DMA_PAGE = (0x0000, 2 * DMA_MAX_LENGTH)
DEVICE_HOST_RANGE = (0x20_0000, 0x200)
#: Test-device memory the board's DMA may use (offsets in its window).
DMA_DEVICE_RANGE = (0x0000, 2 * DMA_MAX_LENGTH)
#: Where the seeds park the bus (:attr:`Plan.park`): on the board half the time.
PARK_CHOICES = ("board", "board", "board", "last", "host", "test_device")
#: Host-bridge profiles the seeds draw from (plus a random legal one).
HOST_PROFILES = sorted(name for name in PROFILES if name != "rtc")
#: DMA commands the seeds draw from (memory only: I/O DMA moves the host's I/O window).
DMA_COMMANDS = ("MW", "MWI", "MR", "MRL", "MRM")
#: Clocks one replay's traffic may take before the seed fails as hung (a seed needs a few
#: tens of thousands).
TRAFFIC_TIMEOUT_CLOCKS = 400_000
#: Configuration DWORDs: Command/Status, and Cache Line Size/Latency Timer.
CFG_COMMAND, CFG_LINE = 0x04, 0x0C
#: Bus time a DMA run may take before it is stopped (far above what a seed needs).
DMA_TIMEOUT_S = 0.004


@dataclass
class Plan:
    """One seed's random choices, drawn before anything runs so the replay is identical."""
    seed: int
    host_profile: object
    device_profile: object
    board_response: dict
    gnt_removal: int
    host_ops: list = field(default_factory=list)
    dma_runs: list = field(default_factory=list)
    device_ops: list = field(default_factory=list)
    rtc: bool = False
    #: Where the arbiter parks the bus when nobody requests: "last" (the last owner) or a
    #: master's name; the board half the time, so that the board's parking and its
    #: hand-over to the other masters are exercised.
    park: str = "last"

    def allowed_rules(self):
        """Checker rules the seed's profiles break on purpose (never our board's)."""
        return set(self.host_profile.breaks_rules) | (set(RTC.breaks_rules) if self.rtc
                                                       else set())


def _span(rng, base, size, *, align=1, largest=64):
    """A random (address, length) inside [base, base + size)."""
    length = rng.randrange(1, largest // align + 1) * align
    offset = rng.randrange(0, (size - length) // align + 1) * align
    return base + offset, length


def make_plan(seed, width, decode="medium"):
    """Every random choice of ``seed`` on a ``width``-bit bus whose board decodes at
    ``decode`` speed."""
    rng = random.Random(seed)
    widths = (32, 64) if width == 64 else (32,)
    host_profile = (_random_profile(rng) if rng.random() < 0.25
                    else PROFILES[rng.choice(HOST_PROFILES)])
    abort = ABORT_RANGE if rng.random() < 0.3 else None
    plan = Plan(seed=seed, host_profile=host_profile, device_profile=_random_profile(rng),
                board_response=random_board_response(rng, width=width, abort=abort,
                                                    decode=decode),
                gnt_removal=rng.choice((0, 0, 3, 8, 20)))
    alias = 0x8000 if width == 64 else 0     # BAR2's 32-bit-only upper half (same RAM)

    for _ in range(rng.randrange(2, 5)):
        kind = rng.choice(("bar2_write", "bar2_write", "bar2_read", "bar3"))
        if kind == "bar3":
            size = rng.choice((1, 2, 4))
            offset = rng.randrange(0, TEST_IO_SIZE // 4) * 4 + rng.randrange(0, 5 - size)
            plan.host_ops.append(("bar3", offset, size, rng.getrandbits(8 * size)))
            continue
        address, length = _span(rng, *HOST_RANGE, largest=64)
        op = {"offset": address, "length": length, "burst": rng.choice((0, 1, 2, 7)),
              "width": rng.choice(widths), "alias": alias if rng.random() < 0.3 else 0}
        if kind == "bar2_write":
            op["data"] = rng.randbytes(length)
        else:
            op["command"] = rng.choice((Command.MEM_READ, Command.MEM_READ_LINE,
                                        Command.MEM_READ_MULTIPLE))
        plan.host_ops.append((kind, op))
    if abort:
        plan.host_ops.insert(rng.randrange(len(plan.host_ops) + 1),
                             ("abort", rng.random() < 0.5))
    plan.rtc = rng.random() < 0.5
    if plan.rtc:
        plan.host_ops.insert(rng.randrange(len(plan.host_ops) + 1),
                             ("rtc", rng.randrange(0x0E)))

    for _ in range(1):
        cmd = rng.choice(DMA_COMMANDS)
        dma_width = rng.choice(widths)
        unit = 32 if cmd == "MWI" else dma_width // 8     # MWI moves whole 32-byte lines
        run = {"cmd": cmd, "width": dma_width, "length": rng.randrange(1, DMA_MAX_LENGTH // unit + 1) * unit,
               "burst": rng.choice((0, 1, 2, 4, 8, 16, 64)), "idle": rng.choice((0, 0, 1, 3)),
               "pattern": rng.choice(sorted(name for name, p in PATTERNS.items()
                                            if p.verifiable)),
               "seed": rng.randrange(1, 1 << 32), "irdy_wait": rng.choice((0, 0, 1, 3)),
               "verify": cmd not in ("MW", "MWI")}
        if rng.random() < 0.4:
            base, size = DMA_DEVICE_RANGE
            run["device_offset"] = base + rng.randrange(0, (size - run["length"]) // 32 + 1) * 32
        plan.dma_runs.append(run)

    for _ in range(rng.randrange(2, 5)):
        into_board = rng.random() < 0.5
        base, size = DEVICE_RANGE if into_board else DEVICE_HOST_RANGE
        address, length = _span(rng, base, size, largest=64)
        op = {"board": into_board, "address": address, "length": length,
              "burst": rng.choice((0, 1, 3)), "width": rng.choice(widths)}
        if rng.random() < 0.6:
            op["data"] = rng.randbytes(length)
        plan.device_ops.append(op)
    # Drawn last, so that the choices above stay those of earlier regressions.
    plan.park = rng.choice(PARK_CHOICES)
    return plan


class Run:
    """One replay of a plan: the scoreboards and what was checked."""

    def __init__(self, system, transport, plan, backdoor, firmware_command):
        self.firmware_command = firmware_command
        self.system, self.transport, self.plan, self.backdoor = system, transport, plan, backdoor
        self.host = system.host
        self.bar2 = transport.bars[2]["address"]
        self.bar3 = transport.bars[3]["address"]
        rng = random.Random(f"fill {plan.seed}")
        self.scratch = Scoreboard("BAR2 scratch RAM", 0, rng.randbytes(SCRATCH_CHECKED))
        self.io = Scoreboard("BAR3 I/O RAM", 0, rng.randbytes(TEST_IO_SIZE))
        self.host_pages = Scoreboard("host memory (DMA buffer and guard)", DMA_PAGE[0],
                                     rng.randbytes(DMA_PAGE[1]))
        self.host_device = Scoreboard("host memory (test device range)", DEVICE_HOST_RANGE[0],
                                      rng.randbytes(DEVICE_HOST_RANGE[1]))
        self.device_memory = Scoreboard("test device memory", DMA_DEVICE_RANGE[0],
                                        rng.randbytes(DMA_DEVICE_RANGE[1]))
        self.dma_results = []
        #: Operations each master has finished (failure messages).
        self.progress = {"host": 0, "dma": 0, "device": 0}

    def fail(self, message):
        raise AssertionError(f"seed {self.plan.seed}: {message}")

    def check(self, condition, message):
        if not condition:
            self.fail(message() if callable(message) else message)

    async def prepare(self, first):
        """The same start for every replay: memories filled, every random behaviour
        reseeded, the board's response and the arbiter programmed (on the ``first``
        replay; the next one only restarts the board's retry count)."""
        system, plan = self.system, self.plan
        self.backdoor.write(2, 0, self.scratch.expected)
        self.backdoor.write(3, 0, self.io.expected)
        for board in (self.host_pages, self.host_device):
            await system.host_memory.backdoor_write(board.base, board.expected)
        await system.test_target.backdoor_write(self.device_memory.base,
                                                self.device_memory.expected)
        if first:
            await target(self.transport, **plan.board_response)
            await system.arbiter.remove_gnt_after(plan.gnt_removal)
            if plan.park == "last":
                await system.arbiter.park_on_last()
            else:
                await system.arbiter.park_on(MASTERS[plan.park])
        else:
            # "Retry the next K attempts" counts from the write of target.retry.
            await Board(self.transport).write("target.retry", self.retry_register)
        # Command, Cache Line Size and Latency Timer as firmware left them (the DMA
        # feature sets bus master, MWI enable and a Latency Timer when they are off: both
        # replays must make the same configuration writes and read the same values).
        # Writing ones to Status clears its error bits (a previous replay's target abort).
        await self.transport.config_write(CFG_COMMAND, self.firmware_command | 0xFFFF_0000)
        await self.transport.config_write(CFG_LINE, 0)
        if first:
            self.retry_register = await Board(self.transport).read("target.retry")
        # Reseeded last: some random behaviours advance every clock, so the clocks from
        # here to the traffic must be the same in both replays.
        await system.host_memory.apply_profile(plan.host_profile, seed=plan.seed)
        await system.test_target.apply_profile(plan.device_profile, seed=plan.seed)
        await system.legacy.apply_profile(RTC, seed=plan.seed)

    # -- the three masters -------------------------------------------------------------
    async def host_traffic(self):
        host, plan = self.host, self.plan
        for index, op in enumerate(plan.host_ops):
            self.progress["host"] = index
            where = f"host op {index} {op[0]}"
            kind = op[0]
            if kind == "bar3":
                _, offset, size, value = op
                result = await host.io_write(self.bar3 + offset, value, size)
                self.check(result.ok, lambda: f"{where}: {result}")
                self.io.write(offset, value.to_bytes(size, "little"))
                back = await host.io_read(self.bar3 + (offset & ~3), 4)
                self.check(back.ok and back.value.to_bytes(4, "little") ==
                           self.io.read(offset & ~3, 4), lambda: f"{where}: read {back}")
            elif kind == "rtc":
                for result in (await host.io_write(RTC_PORT, op[1], 1),
                               await host.io_read(RTC_PORT + 1, 1)):
                    self.check(result.ok, lambda: f"{where}: {result}")
            elif kind == "abort":
                address = self.bar2 + ABORT_RANGE[0] + 4 * (op[1] + 1)
                result = await (host.mem_write(address, b"\x5A" * 4) if op[1]
                                else host.mem_read(address, 4))
                posted = op[1] and self.system.config.bridge
                self.check(result.status == (Outcome.OK if posted else Outcome.TARGET_ABORT),
                           lambda: f"{where}: not a target abort: {result}")
            else:
                op = op[1]
                address = self.bar2 + op["alias"] + op["offset"]
                if kind == "bar2_write":
                    result = await host.mem_write(address, op["data"], burst=op["burst"],
                                                  width=op["width"])
                    self.check(result.ok, lambda: f"{where} {op}: {result}")
                    self.scratch.write(op["offset"], op["data"])
                else:
                    result = await host.mem_read(address, op["length"], burst=op["burst"],
                                                 width=op["width"], command=op["command"])
                    expected = self.scratch.read(op["offset"], op["length"])
                    self.check(result.ok and result.data == expected,
                               lambda: f"{where} {op}: read {result} expected {expected.hex()}")

    async def dma_traffic(self):
        for index, run in enumerate(self.plan.dma_runs):
            self.progress["dma"] = index
            arguments = {k: v for k, v in run.items() if k != "device_offset"}
            device_offset = run.get("device_offset")
            expected = b"".join(v.to_bytes(4, "little") for v in pattern_dwords(
                PATTERNS[run["pattern"]], run["seed"], run["length"] // 4))
            if device_offset is not None:
                arguments["addr"] = TEST_MEM + device_offset
                if run["verify"]:
                    # The engine compares what it reads with the pattern: put it there.
                    await self.system.test_target.backdoor_write(device_offset, expected)
                    self.device_memory.write(device_offset, expected)
            result = await dma(self.transport, timeout_s=DMA_TIMEOUT_S, **arguments)
            where = f"DMA run {index} {run}"
            self.dma_results.append(result)
            self.check(result["error"] is None, lambda: f"{where}: {result['error']}")
            self.check(result["bytes"] == run["length"],
                       lambda: f"{where}: moved {result['bytes']} bytes")
            # 64-bit runs fall back to 32-bit phases where the target gives no ACK64#.
            phases = {run["length"] // 4, run["length"] // (run["width"] // 8)}
            self.check(result["data_phases"] in phases,
                       lambda: f"{where}: {result['data_phases']} data phases")
            if run["verify"]:
                self.check(result["checked"] and result["mismatches"] == 0,
                           lambda: f"{where}: the verifier counted {result['mismatches']} "
                                   f"mismatches (first at DWORD {result['first_mismatch']})")
            if device_offset is None:
                # The feature filled its buffer (a write's with the complement) and checked
                # a write's result; either way the buffer must now hold the pattern.
                self.check(DMA_PAGE[0] <= result["addr"] and
                           result["addr"] + run["length"] <= DMA_PAGE[0] + DMA_MAX_LENGTH,
                           lambda: f"{where}: buffer at {result['addr']:#x}")
                self.check(run["verify"] or (result["checked"] and result["mismatches"] == 0),
                           lambda: f"{where}: {result['mismatches']} DWORDs written wrong")
                self.host_pages.write(result["addr"], expected)
            else:
                self.device_memory.write(device_offset, expected)

    async def device_traffic(self):
        device = self.system.test_initiator
        for index, op in enumerate(self.plan.device_ops):
            self.progress["device"] = index
            board = self.scratch if op["board"] else self.host_device
            address = (self.bar2 if op["board"] else 0) + op["address"]
            where = f"test device op {index} {op}"
            if "data" in op:
                result = await device.mem_write(address, op["data"], burst=op["burst"],
                                                width=op["width"])
                self.check(result.ok, lambda: f"{where}: {result}")
                board.write(op["address"], op["data"])
            else:
                result = await device.mem_read(address, op["length"], burst=op["burst"],
                                               width=op["width"],
                                               command=Command.MEM_READ_MULTIPLE)
                expected = board.read(op["address"], op["length"])
                self.check(result.ok and result.data == expected,
                           lambda: f"{where}: read {result} expected {expected.hex()}")

    async def traffic(self):
        try:
            await with_timeout(gather(self.host_traffic(), self.dma_traffic(),
                                      self.device_traffic()),
                               TRAFFIC_TIMEOUT_CLOCKS * self.system.period_ns, "ns")
        except SimTimeoutError:
            self.fail(f"the traffic did not finish within {TRAFFIC_TIMEOUT_CLOCKS} clocks "
                      f"(at host op {self.progress['host']} of {len(self.plan.host_ops)}, DMA run "
                      f"{self.progress['dma']} of {len(self.plan.dma_runs)}, test device op "
                      f"{self.progress['device']} of {len(self.plan.device_ops)}); "
                      f"{await self._hang_report()}; {self.plan}")

    async def _hang_report(self):
        """What the masters, the arbiter, the checker and the board say after a hang (the
        board's registers read by the test device, which a stuck host cannot)."""
        system = self.system
        parts = [f"host initiator status {await system.host.status():#x}",
                 f"test initiator status {await system.test_initiator.status():#x}",
                 f"arbiter {await system.arbiter.counters()}",
                 f"checker {await system.checker_report()}"]
        for name in ("dma.status", "dma.bytes_lo", "target.attempts", "target.retried"):
            address = self.transport.bars[0]["address"] + REGISTER_MAP[name][0]
            try:
                read = await with_timeout(system.test_initiator.mem_read(address, 4),
                                          1000 * system.period_ns, "ns")
                parts.append(f"{name} {int.from_bytes(read.data, 'little'):#x}")
            except SimTimeoutError:
                parts.append(f"{name} unreadable")
        return ", ".join(parts)

    async def check_memories(self):
        """Every byte of every range where it must be (backdoors, no bus traffic)."""
        memory = self.system.host_memory
        for board, actual in (
                (self.scratch, self.backdoor.read(2, 0, len(self.scratch.expected))),
                (self.io, self.backdoor.read(3, 0, len(self.io.expected))),
                (self.host_pages, await memory.backdoor_read(self.host_pages.base,
                                                             len(self.host_pages.expected))),
                (self.host_device, await memory.backdoor_read(self.host_device.base,
                                                              len(self.host_device.expected))),
                (self.device_memory, await self.system.test_target.backdoor_read(
                    self.device_memory.base, len(self.device_memory.expected)))):
            problem = board.differences(actual)
            self.check(not problem, problem)


def _listing(summaries):
    """Address, command and ending of each summary (failure messages)."""
    return [(hex(int(s["address"])), int(s["command"]), int(s["termination"]))
            for s in summaries]


def _differing(hardware, software, name, limit=6):
    """The first records where ``name`` differs: index, transaction, both values."""
    wrong = [i for i in range(len(hardware)) if hardware[name][i] != software[name][i]]
    return ", ".join(f"#{i} {_listing(hardware[i:i + 1])[0]}: hardware "
                     f"{int(hardware[name][i]):#x}, decoder {int(software[name][i]):#x}"
                     for i in wrong[:limit]) + f" ({len(wrong)} records)"


async def run_seed(system, bars, backdoor, seed, firmware_command):
    """One seed: the plan run twice (raw capture, summary capture); returns the number of
    transactions whose hardware summary was compared."""
    plan = make_plan(seed, system.config.width, system.config.decode)
    await system.clear_checker()
    captured = {}
    retry_register = None
    for mode in ("raw", "summary"):
        transport = SimTransport(system, bars)
        run = Run(system, transport, plan, backdoor, firmware_command)
        run.retry_register = retry_register
        await run.prepare(first=mode == "raw")
        retry_register = run.retry_register
        # The same bus state before both replays: the host owns the bus last (and the
        # bridge the board's bus, behind a bridge).
        await system.board_config().config_read(BOARD_SLOT, 0)
        await system.host.config_read(0, 0)
        capture = await start_capture(transport, mode=mode, filters=[_exclude_bar0(bars)]
                                      if mode == "summary" else ())
        await run.traffic()
        result = await finish_capture(capture)
        run.check(result["status"]["lost"] == 0 and result["status"]["overruns"] == 0,
                  lambda: f"{mode} capture lost records: {result['status']}")
        await run.check_memories()
        captured[mode] = _not_board_regs(summarise(_trace(result)), bars)
    await system.arbiter.remove_gnt_after(0)
    hardware, software = captured["summary"], captured["raw"]
    run.check(len(hardware) == len(software) and len(hardware) > 0,
              lambda: f"{len(hardware)} summaries, {len(software)} decoded from the raw capture: "
                      f"{_listing(hardware)} / {_listing(software)}")
    for name in COMPARED:
        run.check((hardware[name] == software[name]).all(),
                  lambda: f"summary field {name} differs at {_differing(hardware, software, name)}")
    rebased = lambda s: s["timestamp"].astype(int) - int(s["timestamp"][0])
    run.check((rebased(hardware) == rebased(software)).all(), "summary timestamps differ")

    report = await system.checker_report()
    run.check(not report["contention"], lambda: f"two drivers on a line: {report}")
    run.check(not report["drivers"],
              lambda: f"driver rules broken {sorted(report['drivers'])} (park {plan.park}): "
                      f"{report['driver_log']}")
    fired = set(report["violations"])
    run.check(fired <= plan.allowed_rules(),
              lambda: f"checker rules fired {sorted(fired - plan.allowed_rules())} "
                      f"(allowed {sorted(plan.allowed_rules())}): {report}")
    if plan.rtc:
        run.check(set(RTC.breaks_rules) <= fired, lambda: f"the RTC's deliberate breaks "
                  f"{RTC.breaks_rules} were not seen: {report}")
    if system.config.bridge:
        behind = await system.checker_report(secondary=True)
        run.check(not behind["contention"] and not behind["drivers"]
                  and not behind["violations"],
                  lambda: f"the board's bus behind the bridge: {behind}")
    return len(hardware)


async def set_up(system):
    """Ready a started system for :func:`run_seed`: the board enumerated, the test
    device's windows open, the host bridge shared. Returns ``(bars, backdoor,
    firmware_command)`` for :func:`run_seed`."""
    bars = await system.enumerate_board()
    await system.test_target.set_windows(mem=(TEST_MEM, TEST_MEM_SIZE),
                                         io=(TEST_IO, TEST_IO_SIZE))
    system.host = SharedInitiator(system.host)
    backdoor = ScratchBackdoor(system.dut, system.config.width)
    # The Command register as enumeration left it (Status bits are write-1-to-clear: 0).
    firmware_command = (await system.board_config().config_read(BOARD_SLOT, CFG_COMMAND)
                        ).value & 0xFFFF
    return bars, backdoor, firmware_command


@cocotb.test()
async def compliance_seeds(dut):
    """Every seed of ``PCISPY_SEED_LIST`` in one simulator process."""
    system = await SimSystem(dut).start()
    bars, backdoor, firmware_command = await set_up(system)
    seeds = json.loads(os.environ.get(SEED_LIST_ENV, "[1]"))
    checked = 0
    for seed in seeds:
        try:
            checked += await run_seed(system, bars, backdoor, seed, firmware_command)
        except AssertionError:
            raise
        except Exception as error:
            raise AssertionError(f"seed {seed}: {type(error).__name__}: {error}") from error
    dut._log.info(f"compliance: {len(seeds)} seeds, {checked} transactions compared")
    if os.environ.get(RESULT_ENV):
        with open(os.environ[RESULT_ENV], "w") as f:
            json.dump({"seeds": len(seeds), "transactions_checked": checked}, f)
