# SPDX-License-Identifier: BSD-2-Clause
"""cocotb benches of the bus models against each other (no board in the system).

The host bridge talks to the test device, the test device masters into host memory, and
every bench ends with the protocol checker clean and no contention. Run by
``pcispy/sim/tests/test_bfm_system.py`` (pytest), which picks the system, profile and seed.
"""

import os
import random

import cocotb

from pcispy.pci.bus import Command, DevselSpeed
from pcispy.sim.api import SimSystem
from pcispy.sim.bfm.profiles import PROFILES, DisconnectMode, RetryMode
from pcispy.sim.bfm.initiator_control import Outcome

#: Where the benches open the test device's windows.
TEST_MEM = 0x9000_0000
TEST_MEM_SIZE = 0x4000
TEST_IO = 0x2000
TEST_IO_SIZE = 0x100
#: An address no agent claims (master abort).
NOBODY = 0xF000_0000

DEVSEL_CLOCK = {DevselSpeed.FAST: 2, DevselSpeed.MEDIUM: 3, DevselSpeed.SLOW: 4,
                DevselSpeed.SUBTRACTIVE: 5}


async def _system(dut):
    system = await SimSystem(dut).start()
    await system.test_target.set_windows(mem=(TEST_MEM, TEST_MEM_SIZE),
                                         io=(TEST_IO, TEST_IO_SIZE))
    return system


def _rng():
    seed = int(os.environ.get("PCISPY_SEED", "1"))
    return random.Random(seed)


@cocotb.test()
async def memory_every_command_and_burst(dut):
    """Host bridge -> test device: every memory command, burst lengths, widths; the bytes
    land in the test device's memory and come back unchanged."""
    system = await _system(dut)
    rng = _rng()
    widths = [32, 64] if system.config.width == 64 else [32]
    offset = 0
    for width in widths:
        for burst in (1, 3, 16, 0):
            for write_cmd in (Command.MEM_WRITE, Command.MEM_WRITE_INVALIDATE):
                size = 64
                data = bytes(rng.randrange(256) for _ in range(size))
                address = TEST_MEM + offset
                result = await system.host.mem_write(address, data, burst=burst, width=width,
                                                     command=write_cmd)
                assert result.ok, result
                expected_phases = size // (8 if width == 64 and result.ack64 else 4)
                assert result.phases == expected_phases, result
                assert await system.test_target.backdoor_read(offset, size) == data
                for read_cmd in (Command.MEM_READ, Command.MEM_READ_LINE,
                                 Command.MEM_READ_MULTIPLE):
                    back = await system.host.mem_read(address, size, burst=burst,
                                                      width=width, command=read_cmd)
                    assert back.ok and back.data == data, (read_cmd, burst, width, back)
                offset = (offset + size) % TEST_MEM_SIZE
    # Partial words: byte enables on the first and last data phase.
    await system.test_target.backdoor_write(0x100, bytes(16))
    result = await system.host.mem_write(TEST_MEM + 0x101, b"\xAA\xBB\xCC\xDD\xEE")
    assert result.ok
    assert await system.test_target.backdoor_read(0x100, 8) == b"\x00\xAA\xBB\xCC\xDD\xEE\x00\x00"
    await system.assert_clean()


@cocotb.test()
async def io_and_config(dut):
    """I/O reads and writes of 1, 2 and 4 bytes; configuration reads of the test device."""
    system = await _system(dut)
    await system.test_target.set_windows(config=True)
    for size, value in ((1, 0x5A), (2, 0xBEEF), (4, 0x1234_5678)):
        address = TEST_IO + 4 * size
        assert (await system.host.io_write(address, value, size)).ok
        back = await system.host.io_read(address, size)
        assert back.ok and back.value == value, (size, back)
    ident = await system.host.config_read(1, 0x00)
    assert ident.ok and ident.value not in (0, 0xFFFF_FFFF), ident
    nobody = await system.host.config_read(5, 0x00)
    assert nobody.status == Outcome.MASTER_ABORT and nobody.value == 0xFFFF_FFFF, nobody
    await system.assert_clean()


@cocotb.test()
async def every_termination(dut):
    """Retry (repeated until it goes through), disconnect with and without data
    (continued at the next address), target abort and master abort (reported)."""
    system = await _system(dut)
    target = system.test_target
    data = bytes(range(64))

    await target.apply_profile(PROFILES["ideal"].but(
        retry=RetryMode.FIRST, retry_count=3, retry_probability=256))
    result = await system.host.mem_write(TEST_MEM, data)
    assert result.ok and result.retries == 3, result
    assert await target.backdoor_read(0, 64) == data

    for mode, every in ((DisconnectMode.WITH_DATA, 4), (DisconnectMode.WITHOUT_DATA, 5)):
        await target.apply_profile(PROFILES["ideal"].but(disconnect=mode, disconnect_every=every))
        payload = bytes(reversed(data))
        result = await system.host.mem_write(TEST_MEM + 0x200, payload)
        assert result.ok and result.phases == 16, result
        assert result.transactions == -(-16 // every), (mode, result)
        assert await target.backdoor_read(0x200, 64) == payload
        back = await system.host.mem_read(TEST_MEM + 0x200, 64)
        assert back.ok and back.data == payload, (mode, back)

    await target.apply_profile(PROFILES["ideal"].but(abort_range=(TEST_MEM + 0x1000, 0x100)))
    result = await system.host.mem_write(TEST_MEM + 0x1000, data)
    assert result.status == Outcome.TARGET_ABORT, result
    result = await system.host.mem_read(NOBODY, 16)
    assert result.status == Outcome.MASTER_ABORT and result.data == b"\xff" * 16, result
    await system.assert_clean()


@cocotb.test()
async def early_perr_held_to_completion(dut):
    """The test device's target reports a write data parity error early, while the data
    phase waits (``perr_early``), and holds PERR# until two clocks after the phase
    completes (PCI LB 3.0 §3.7.4.1): the checker's PERR# rules (perr_timing,
    perr_released_early, perr_without_parity_error) stay quiet; the one rule that fires is
    the wrong parity itself (write_data_parity), which the host bridge sends on purpose."""
    system = await _system(dut)
    target = system.test_target
    await target.set_fields(perr_early=1, write_latency_min=4, write_latency_max=4)
    await target.clear_stats()
    await system.host.inject(wdata_parity=1)
    result = await system.host.mem_write(TEST_MEM, bytes(range(4)))
    await system.host.inject()
    assert result.ok, result
    assert (await target.stats())["parity_errors"] == 1
    assert await target.status() & (1 << 15)          # Detected Parity Error
    await system.assert_clean(expected=("write_data_parity",))


def _expected_clocks(profile, *, phases, read):
    """Clocks one transaction of ``phases`` data phases occupies on the bus under a
    deterministic ``profile``: from its address phase to the idle clock after it, inclusive.
    Derived from the rules: DEVSEL#/TRDY# timing, the read turnaround, wait patterns."""
    latency = (profile.read_latency if read else profile.write_latency)[0]
    first = max(latency + 1, DEVSEL_CLOCK[profile.devsel], 3 if read else 2)
    clocks = first                       # address phase .. first data phase
    for phase in range(1, phases):
        clocks += 1
        if profile.wait_mask >> (phase % profile.wait_period) & 1:
            clocks += profile.wait_clocks
    return clocks + 1                    # the idle clock after the last data phase


@cocotb.test()
async def test_device_masters_host_memory(dut):
    """The test device writes and reads host memory under the profile the bench gives;
    data is exact, and on deterministic profiles each extra transaction costs exactly what
    the rules say."""
    system = await _system(dut)
    profile = system.profile
    rng = _rng()
    data = bytes(rng.randrange(256) for _ in range(4096))
    master = system.test_initiator
    result = await master.mem_write(0x10000, data, burst=64)
    assert result.ok, result
    assert await system.host_memory.backdoor_read(0x10000, len(data)) == data
    back = await master.mem_read(0x10000, len(data), burst=64, command=Command.MEM_READ_MULTIPLE)
    assert back.ok and back.data == data
    if profile.deterministic and profile.disconnect == DisconnectMode.NONE:
        for read in (False, True):
            burst = 16
            runs = {}
            for transactions in (1, 5):
                size = 4 * burst * transactions
                if read:
                    r = await master.mem_read(0x20000, size, burst=burst)
                else:
                    r = await master.mem_write(0x20000, bytes(size), burst=burst)
                assert r.ok and r.transactions == transactions, r
                runs[transactions] = r.clocks
            per = _expected_clocks(profile, phases=burst, read=read)
            assert runs[5] - runs[1] == 4 * per, (profile.name, read, runs, per)
    await system.assert_clean(expected=profile.breaks_rules)


def _random_profile(rng):
    """A legal, seeded random behaviour for the test device's target."""
    base = PROFILES["ideal"]
    return base.but(
        devsel=rng.choice(list(DevselSpeed)[:3]),
        read_latency=(lat := rng.randrange(0, 8), lat),
        write_latency=(wlat := rng.randrange(0, 6), wlat),
        wait_mask=rng.randrange(0, 1 << 16), wait_period=rng.randrange(1, 17),
        wait_clocks=rng.randrange(0, 4),
        disconnect=rng.choice(list(DisconnectMode)[:3]), disconnect_every=rng.randrange(1, 9),
        retry=rng.choice([RetryMode.NONE, RetryMode.FIRST, RetryMode.RANDOM]),
        retry_count=rng.randrange(1, 4), retry_probability=rng.randrange(0, 96),
        ack64=rng.random() < 0.5)


@cocotb.test()
async def randomised_traffic(dut):
    """Seeded random transfers from the host bridge and the test device at once, under a
    random legal target behaviour: every byte lands where it should, the checker stays
    clean. The seed is in the failure message."""
    system = await _system(dut)
    seed = system.seed
    rng = _rng()
    profile = _random_profile(rng)
    await system.test_target.apply_profile(profile, seed=seed)
    shadow = bytearray(TEST_MEM_SIZE)
    host_shadow = {}
    widths = [32, 64] if system.config.width == 64 else [32]
    for step in range(24):
        offset = rng.randrange(0, TEST_MEM_SIZE - 256) & ~3
        size = rng.choice([4, 8, 12, 64, 128, 256])
        width = rng.choice(widths)
        burst = rng.choice([0, 1, 2, 7, 16])
        data = bytes(rng.randrange(256) for _ in range(size))
        # The test device masters into host memory while the host bridge writes to it.
        host_address = 0x40000 + 0x400 * (step % 8)
        background = await system.test_initiator.submit_mem_write(
            host_address, data, burst=rng.choice([0, 4]), width=width)
        result = await system.host.mem_write(TEST_MEM + offset, data, burst=burst, width=width)
        assert result.ok, f"seed {seed} step {step}: {result}"
        shadow[offset:offset + size] = data
        done = await system.test_initiator.wait(background)
        assert done.ok, f"seed {seed} step {step}: {done}"
        host_shadow[host_address] = data
        read_size = rng.choice([4, 32, 128])
        read_offset = rng.randrange(0, TEST_MEM_SIZE - read_size) & ~3
        back = await system.host.mem_read(TEST_MEM + read_offset, read_size, burst=burst,
                                          width=width, command=rng.choice(
                                              [Command.MEM_READ, Command.MEM_READ_LINE,
                                               Command.MEM_READ_MULTIPLE]))
        assert back.ok and back.data == bytes(shadow[read_offset:read_offset + read_size]), \
            f"seed {seed} step {step}: read at {read_offset:#x} under {profile}"
    assert await system.test_target.backdoor_read(0, TEST_MEM_SIZE) == bytes(shadow), \
        f"seed {seed}: test device memory differs from the scoreboard"
    for address, data in host_shadow.items():
        assert await system.host_memory.backdoor_read(address, len(data)) == data, \
            f"seed {seed}: host memory at {address:#x}"
    await system.assert_clean()
