# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of the board's DMA master in the simulated system, driven by the host
feature (pcispy.dma.dma_feature) through the sim transport, as ``pcispy dma`` runs it.

Each bench runs many DMAs in one simulator process (profiles are switched in place), and
ends with the protocol checker clean, or breaking exactly the rules a profile breaks on
purpose. Run by ``pcispy/dma/tests/test_dma_system.py``.
"""

import os
import random

import cocotb

from pcispy.host.errors import RefusedSetting
from pcispy.dma.dma_feature import dma
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.profiles import PROFILES, DisconnectMode, RetryMode, DevselSpeed
from pcispy.sim.transport import SimTransport

#: The host-bridge profiles (the rtc profile belongs to the legacy device).
HOST_PROFILES = sorted(name for name in PROFILES if name != "rtc")
#: Every command ``pcispy dma`` takes.
READS = ("MR", "MRL", "MRM", "IOR")
WRITES = ("MW", "MWI", "IOW")
#: Clocks of a run beyond its transactions on the ideal host: from the start write to
#: REQ#/GNT# and the first address phase, and from the last idle clock to done.
START_CLOCKS = 3


async def _board(dut, profile=None):
    system = await SimSystem(dut, profile=profile).start()
    transport = SimTransport(system, await system.enumerate_board())
    return system, transport


def _ok(result, what):
    assert result["error"] is None, f"{what}: {result['error']}: {result}"
    assert result["bytes"] == result["length"] * result["passes"], (what, result)
    assert result["checked"] and result["mismatches"] == 0, (what, result)


async def _checked(system, expected=()):
    """Assert the checker report, then clear it for the next part."""
    await system.assert_clean(expected=expected)
    await system.clear_checker()


@cocotb.test()
async def every_command_width_profile(dut):
    """Every command x width x host profile: writes checked byte for byte in host memory,
    reads by the engine's verifier; checker clean or exactly the profile's breaks_rules."""
    system, transport = await _board(dut)
    widths = (32, 64) if system.config.width == 64 else (32,)
    for name in HOST_PROFILES:
        profile = PROFILES[name]
        await system.apply_profile(name)
        for width in widths:
            for cmd in WRITES + READS:
                if width == 64 and cmd in ("IOR", "IOW"):
                    continue
                for burst, pattern in ((16, "lfsr"), (0, "counter")):
                    length = 1024 if cmd.startswith("IO") else 2048
                    result = await dma(transport, cmd=cmd, length=length, burst=burst,
                                       width=width, pattern=pattern, seed=0x1234_5678,
                                       verify=cmd in READS)
                    what = f"{name} {cmd} {width}-bit burst {burst}"
                    _ok(result, what)
                    phases = length // (8 if width == 64 and profile.ack64 else 4)
                    assert result["data_phases"] == phases, (what, result)
        await _checked(system, profile.breaks_rules)


def ideal_clocks(cmd, transactions, burst):
    """Clocks of a run on the ideal host: each transaction costs its address clock, B data
    clocks and one idle clock, and reads one AD turnaround clock more."""
    per = 1 + burst + 1 + (0 if cmd in WRITES else 1)
    return transactions * per + START_CLOCKS


@cocotb.test()
async def exact_clock_counts(dut):
    """The ideal host: MW and MRM, bursts 1..256 and unlimited, exact clocks from start to
    done, exact clocks owning the bus, no GNT# wait after the first transaction."""
    system, transport = await _board(dut, "ideal")
    for cmd in ("MW", "MRM"):
        for burst, length in ((1, 256), (16, 4096), (64, 4096), (256, 16384), (0, 2048)):
            result = await dma(transport, cmd=cmd, length=length, burst=burst,
                               verify=cmd == "MRM")
            what = f"{cmd} burst {burst}"
            _ok(result, what)
            phases = length // 4
            burst = burst or phases
            transactions = phases // burst
            assert result["transactions"] == transactions, (what, result)
            assert result["clocks"] == ideal_clocks(cmd, transactions, burst), (what, result)
            assert result["bus_clocks"] == transactions * (1 + burst + (cmd == "MRM")), \
                (what, result)
            assert result["latency_min"] == result["latency_max"] == 1 + (cmd == "MRM"), \
                (what, result)
    await _checked(system)


@cocotb.test()
async def terminations(dut):
    """Retry storms, disconnects every N (with and without data), target abort, master
    abort, latency timer expiry with GNT# removed, PERR# on bad read parity: the data
    still lands exactly (or the run reports the abort), and the counters say what happened."""
    system, transport = await _board(dut, "ideal")
    ideal = PROFILES["ideal"]
    memory = system.host_memory

    # Retry storm: every new transaction retried 5 times before it goes through.
    await memory.apply_profile(ideal.but(retry=RetryMode.FIRST, retry_count=5,
                                         retry_probability=256))
    for cmd in ("MW", "MRM"):
        result = await dma(transport, cmd=cmd, length=1024, burst=16, verify=cmd == "MRM")
        _ok(result, f"retry storm {cmd}")
        assert result["retries"] == 5 * 16 and result["transactions"] == 6 * 16, result
    await _checked(system)

    # Disconnect every N data phases, with data (N move) and without (N move, then STOP#).
    for mode, every in ((DisconnectMode.WITH_DATA, 5), (DisconnectMode.WITHOUT_DATA, 7)):
        await memory.apply_profile(ideal.but(disconnect=mode, disconnect_every=every))
        for cmd in ("MW", "MRL"):
            result = await dma(transport, cmd=cmd, length=1024, burst=0, verify=cmd == "MRL")
            _ok(result, f"{mode.name} {every} {cmd}")
            ends = -(-256 // every)
            counted = result["disconnects_data"] if mode == DisconnectMode.WITH_DATA \
                else result["disconnects_nodata"]
            # The last piece may end by the master's own completion.
            assert counted in (ends, ends - 1) and result["transactions"] == ends, \
                (mode, cmd, result)
        await _checked(system)

    # Target abort inside the buffer: the run stops and says so.
    await memory.apply_profile(ideal.but(abort_range=(0x20_0000, 0x1000)))
    result = await dma(transport, cmd="MW", addr=0x20_0000, length=256, burst=16)
    assert result["target_aborts"] == 1 and result["aborts"] == 1, result
    assert result["error"].startswith("target abort"), result
    assert result["pci_status"]["received_target_abort"], result
    await memory.apply_profile(ideal)
    await _checked(system)

    # Master abort: nobody answers this address.
    result = await dma(transport, cmd="MR", addr=0xF000_0000, length=64, burst=4)
    assert result["master_aborts"] == 1 and result["bytes"] == 0, result
    assert result["error"].startswith("master abort"), result
    assert result["pci_status"]["received_master_abort"], result
    await _checked(system)

    # Latency timer expiry with GNT# removed: bursts end early, data still exact.
    await system.arbiter.remove_gnt_after(20)
    result = await dma(transport, cmd="MW", length=4096, burst=0, latency_timer=16)
    _ok(result, "latency timer")
    assert result["latency_timer_ends"] >= 1, result
    assert result["transactions"] == result["latency_timer_ends"] + 1, result
    await system.arbiter.remove_gnt_after(0)
    await _checked(system)

    # PERR#: host memory returns a wrong PAR on read data phase 3 of each transaction.
    await memory.apply_profile(ideal.but(bad_par_phase=3))
    result = await dma(transport, cmd="MRM", length=256, burst=16, verify=True)
    assert result["pci_status"]["master_data_parity_error"], result
    assert result["pci_status"]["detected_parity_error"], result
    assert result["mismatches"] == 0 and result["bytes"] == 256, result
    await memory.apply_profile(ideal)
    report = await system.checker_report()
    assert not report["contention"], report
    await system.clear_checker()

    # A refused setting raises with every reason, and the engine did not run.
    for settings, words in (({"cmd": "MW", "length": 6}, "multiple of the width"),
                            ({"cmd": "MR", "verify": True, "pattern": "timestamp"}, "verify"),
                            ({"cmd": "MW", "width": 64}, "64-bit")):
        try:
            await dma(transport, addr=0x1000, **settings)
        except RefusedSetting as refusal:
            assert words in str(refusal), (settings, refusal)
        else:
            raise AssertionError(f"{settings} was not refused")


def _random_profile(rng, seed):
    """A legal host-memory behaviour drawn from ``rng`` (latencies within the rules)."""
    low = rng.randrange(0, 8)
    return PROFILES["ideal"].but(
        name=f"random{seed}",
        devsel=rng.choice([DevselSpeed.FAST, DevselSpeed.MEDIUM, DevselSpeed.SLOW]),
        read_latency=(low, low + rng.randrange(0, 8)), write_latency=(0, rng.randrange(0, 6)),
        wait_mask=rng.randrange(0, 1 << 16), wait_period=rng.randrange(1, 17),
        wait_clocks=rng.randrange(0, 4),
        disconnect=rng.choice([DisconnectMode.NONE, DisconnectMode.WITH_DATA,
                               DisconnectMode.WITHOUT_DATA, DisconnectMode.CACHE_LINE]),
        disconnect_every=rng.randrange(1, 33),
        retry=rng.choice([RetryMode.NONE, RetryMode.FIRST, RetryMode.RANDOM]),
        retry_count=rng.randrange(1, 4), retry_probability=rng.randrange(0, 64),
        ack64=rng.random() < 0.5)


#: The fixed seeds of the randomised bench (PCISPY_DMA_SEEDS="1,2,..." for others).
SEEDS = [int(s) for s in os.environ.get("PCISPY_DMA_SEEDS", "1,2,3,4,5,6").split(",")]


@cocotb.test()
async def randomised_profiles(dut):
    """For each seed: a random legal host behaviour and random DMAs (command, length,
    burst, idle, width, pattern); data exact, counters consistent, checker clean. A
    failure names its seed."""
    system, transport = await _board(dut, "ideal")
    widths = (32, 64) if system.config.width == 64 else (32,)
    for seed in SEEDS:
        rng = random.Random(seed)
        profile = _random_profile(rng, seed)
        await system.host_memory.apply_profile(profile, seed=seed)
        for step in range(6):
            cmd = rng.choice(READS + WRITES)
            width = 32 if cmd.startswith("IO") else rng.choice(widths)
            length = rng.choice([32, 64, 256, 1024, 1536])
            burst = rng.choice([0, 1, 3, 8, 16, 100])
            pattern = rng.choice(["counter", "lfsr", "constant"])
            what = f"seed {seed} step {step}: {cmd} {width}-bit len {length} burst {burst}"
            result = await dma(transport, cmd=cmd, length=length, burst=burst, width=width,
                               idle=rng.choice([0, 0, 2, 7]), pattern=pattern,
                               seed=rng.randrange(1, 1 << 32), verify=cmd in READS)
            _ok(result, what)
            assert result["transactions"] == (result["retries"] + result["latency_count"]), \
                (what, result)
        report = await system.checker_report()
        assert not report["contention"] and not report["violations"], \
            f"seed {seed} profile {profile}: {report}"
        await system.clear_checker()


@cocotb.test()
async def ack64_missing(dut):
    """64-bit DMA to a host that does not answer ACK64#: the master falls back to 32-bit
    data phases, the data is exact; with ACK64# the same run takes half the phases."""
    system, transport = await _board(dut, "ideal")
    for ack64 in (False, True):
        await system.host_memory.apply_profile(PROFILES["ideal"].but(ack64=ack64))
        for cmd in ("MW", "MRM"):
            result = await dma(transport, cmd=cmd, length=2048, burst=32, width=64,
                               verify=cmd == "MRM")
            _ok(result, f"ack64={ack64} {cmd}")
            assert result["data_phases"] == 2048 // (8 if ack64 else 4), (ack64, cmd, result)
    await _checked(system)
