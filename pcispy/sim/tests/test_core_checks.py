# SPDX-License-Identifier: BSD-2-Clause
"""The judgement of sim-test's checks (pcispy/sim/coretest.py) on cores that answer in
ways no core of this repository does, through a host bridge played in Python: functions
1-7 answering single-function devices (copies of function 0, or functions of their own),
and memory BARs that are registers (a view of the configuration header, a word that does
not keep what is written) or RAM. No simulator runs here."""

import asyncio
from dataclasses import dataclass

import pytest

from pcispy.sim import coretest
from pcispy.sim.bfm.firmware import Bar
from pcispy.sim.bfm.initiator_control import Outcome

pytestmark = pytest.mark.core

#: Function 0's header as a core would hold it: IDs, Command/Status, class, header type.
HEADER = {0x00: 0x0003_5C15, 0x04: 0x0200_0146, 0x08: 0x0680_0001, 0x0C: 0x0000_4008}


@dataclass
class Result:
    status: Outcome
    value: int = None
    data: bytes = None

    @property
    def ok(self):
        return self.status == Outcome.OK


class FakeHost:
    """A host bridge in front of one core: ``functions`` ``{number: {register: DWORD}}``;
    ``windows`` ``{base: (size, kind)}``, kind "ram" (keeps words), "config" (reads the
    header, writes ignored) or "stuck" (reads 0, keeps nothing)."""

    def __init__(self, functions, windows=()):
        self.functions = functions
        self.windows = dict(windows)
        self.ram = {}
        self.writes = []

    async def config_read(self, slot, register, function=0):
        if function not in self.functions:
            return Result(Outcome.MASTER_ABORT)
        return Result(Outcome.OK, self.functions[function].get(register, 0))

    def _window(self, address):
        for base, (size, kind) in self.windows.items():
            if base <= address < base + size:
                return base, kind
        raise AssertionError(f"nobody at {address:#x}")

    async def mem_read(self, address, size):
        base, kind = self._window(address)
        word = {"ram": self.ram.get(address, 0), "stuck": 0,
                "config": self.functions[0].get(address - base, 0)}[kind]
        return Result(Outcome.OK, data=word.to_bytes(4, "little"))

    async def mem_write(self, address, data):
        base, kind = self._window(address)
        self.writes.append((kind, address - base))
        if kind == "ram":
            self.ram[address] = int.from_bytes(data, "little")
        return Result(Outcome.OK)


class FakeSystem:
    def __init__(self, host, ram_bars=None):
        self.host = host
        self.seed = 1
        self.config = type("Config", (), {"core": type("Core", (), {"ram_bars": ram_bars})})


def _run(check, system, state):
    return asyncio.run(check(system, state))


def _absent(functions):
    try:
        return "pass", _run(coretest._absent_functions, FakeSystem(FakeHost(functions)), {})
    except coretest._Warn as why:
        return "warn", str(why)
    except AssertionError as why:
        return "fail", str(why)


def test_single_function_device_without_other_functions_passes():
    assert _absent({0: HEADER}) == ("pass", "functions 1-7 absent")


def test_a_device_ignoring_the_function_number_is_a_warning():
    # What fpga4fun's Dragon does: every function number reads function 0's header.
    result, detail = _absent({number: HEADER for number in range(8)})
    assert result == "warn"
    assert detail.startswith("functions [1, 2, 3, 4, 5, 6, 7] answer as copies of function "
                             "0: allowed for a single-function device"), detail


def test_functions_hidden_behind_a_single_function_header_fail():
    other = {**HEADER, 0x00: 0x0004_5C15}
    result, detail = _absent({0: HEADER, 1: HEADER, 3: other})
    assert result == "fail"
    assert detail.startswith("functions [3] answer with a header other than function 0's, "
                             "but Header Type 0x00 says single-function"), detail


def test_a_multi_function_device_may_answer_more_functions():
    multi = {**HEADER, 0x0C: 0x0080_4008}
    assert _absent({0: multi, 2: HEADER}) == \
        ("pass", "multi-function (Header Type 0x80): functions [2] answer besides 0")


def _decide(windows, ram_bars=None, writes=True):
    host = FakeHost({0: HEADER}, {bar.address: (bar.size, kind) for bar, kind in windows})
    state = {"function": type("F", (), {"bars": [bar for bar, _ in windows]}),
             "writes": writes}
    detail = _run(coretest._ram_bars, FakeSystem(host, ram_bars), state)
    return [bar.index for bar in state["ram"]], detail, host.writes


CONFIG_BAR = Bar(0, "memory", 0x1000, 0x8000_0000)
RAM_BAR = Bar(1, "memory", 0x400, 0x8000_1000)
REGISTER_BAR = Bar(2, "memory", 0x100, 0x8000_2000)


def test_probe_never_writes_a_bar_that_reads_like_the_configuration_header():
    ram, detail, writes = _decide([(CONFIG_BAR, "config"), (RAM_BAR, "ram")])
    assert ram == [1]
    assert detail == ("BAR0 registers: reads like the configuration header (IDs 0x00035c15), "
                      "never written; BAR1 RAM (probed: 3 words kept a pattern)")
    # Each probed RAM word: the pattern, then what it held; nothing into BAR0.
    assert writes == [("ram", offset) for offset in (0x3FC, 0x200, 0) for _ in range(2)]


def test_probe_takes_a_bar_whose_word_does_not_keep_a_pattern_for_registers():
    ram, detail, writes = _decide([(REGISTER_BAR, "stuck")])
    assert ram == [] and writes == [("stuck", 0xFC), ("stuck", 0xFC)]
    assert detail == "BAR2 registers: +0xfc did not keep a written word"


def test_described_ram_bars_are_taken_without_a_probe():
    ram, detail, writes = _decide([(CONFIG_BAR, "config"), (RAM_BAR, "ram")], ram_bars=(1,))
    assert (ram, writes) == ([1], [])
    assert detail == "BAR1 RAM (ram_bars); BAR0 not RAM (ram_bars)"


def test_ram_bars_naming_no_memory_bar_fails():
    with pytest.raises(AssertionError, match="ram_bars names BAR3, which is not a memory "
                                             r"BAR of the core \(memory BARs: \[0, 1\]\)"):
        _decide([(CONFIG_BAR, "config"), (RAM_BAR, "ram")], ram_bars=(3,))


def test_no_writes_probes_without_writing():
    ram, detail, writes = _decide([(CONFIG_BAR, "config"), (RAM_BAR, "ram")], writes=False)
    assert (ram, writes) == ([], [])
    assert detail.endswith("BAR1 not probed (writes disabled)")


def test_a_rule_the_host_profile_breaks_is_expected_unless_the_core_is_named():
    log = [{"rule": "target_initial_latency", "agents": ["host_memory (target)"]},
           {"rule": "read_data_parity", "agents": ["my_core (target)"]}]
    on_purpose = {"target_initial_latency", "read_data_parity"}
    assert coretest._expected({"target_initial_latency": 3, "read_data_parity": 1}, log,
                              on_purpose, "my_core") == ["target_initial_latency"]
