# SPDX-License-Identifier: BSD-2-Clause
"""One DMA run of the board's bus master, and the ``pcispy dma`` command.

:func:`dma` enables bus mastering (and the Cache Line Size / Latency Timer where asked or
needed) in the board's configuration space, places a buffer in host memory (unless an
address is given), programs the ``dma`` register block (pcispy/dma/registers.py), starts the
engine, lets the run's expected time pass on the bus side without touching the bus, then
polls ``dma.status`` and reads every result counter. After a write the buffer is compared
with the pattern (:func:`pcispy.dma.dwords.pattern_dwords`); reads are
checked by the engine's verifier (``--verify``) against the same pattern, which this
feature stores in the buffer first.

Throughput is bytes over the clocks from start to done at the bus clock (PCI's 33 and 66
MHz are 30 and 15 ns clocks).
"""

import argparse

from pcispy.dma.dwords import pattern_dwords
from pcispy.dma.registers import DMA, Pattern
from pcispy.pci.codes import COMMAND_MNEMONICS
from pcispy.host.board import Board
from pcispy.host.command import (CliCommand, int_range, parse_size,
                                 positive_seconds, run_feature)
from pcispy.host.errors import PcispyError, RefusedSetting

__all__ = ["COMMANDS", "PATTERNS", "SETTINGS", "dma", "parse_address",
           "setting_field", "setting_type", "DmaCommand", "add_dma_arguments",
           "format_result"]

#: The commands a DMA run may use: mnemonic (``--cmd``) -> code (C/BE# in the address
#: phase, :class:`pcispy.pci.bus.Command`'s value; codes, not the enum, so that the command
#: line loads no gateware).
COMMANDS = {name: COMMAND_MNEMONICS.index(name)
            for name in ("MR", "MRL", "MRM", "MW", "MWI", "IOR", "IOW")}

#: Data patterns by name (``--pattern``).
PATTERNS = {p.name.lower(): p for p in Pattern}

#: The arguments of :func:`dma` that each program one field of the ``dma`` block
#: ("register.field"), in the order they are written. Their values are the field's
#: (:attr:`~pcispy.csr.map.Field.accepted`: pcispy/dma/registers.py declares any narrower
#: range), which the options and :func:`dma` check before the board does.
SETTINGS = {"length": "length.length", "burst": "burst.phases", "idle": "idle.clocks",
            "seed": "seed.seed", "passes": "passes.count", "irdy_wait": "wait.irdy"}
#: How messages name a setting, where not by its argument.
_SAYS = {"irdy_wait": "IRDY# wait"}

_IO_COMMANDS = (COMMANDS["IOR"], COMMANDS["IOW"])
_STATUS = next(r for r in DMA.registers if r.name == "status")
#: The refusal bits of ``dma.status`` and what each means (from the register map).
_REFUSALS = {f.name: f.doc.removeprefix("refused: ") for f in _STATUS.fields
             if f.name.startswith("err_")}
_W1C = {f.name: 1 for f in _STATUS.fields if f.access.value == "w1c"}

#: Configuration space: Command register bits and the DWORD holding Cache Line Size and
#: Latency Timer.
_CFG_COMMAND, _CFG_LINE = 0x04, 0x0C
_BUS_MASTER, _MWI_ENABLE, _PARITY_RESPONSE = 1 << 2, 1 << 4, 1 << 6
#: Latency Timer set when the one found is below MIN_LATENCY_TIMER (and none is given).
DEFAULT_LATENCY_TIMER, MIN_LATENCY_TIMER = 64, 16
#: Configuration Status error bits (write 1 to clear), reported after a run.
_STATUS_ERRORS = {"master_data_parity_error": 8, "signaled_target_abort": 11,
                  "received_target_abort": 12, "received_master_abort": 13,
                  "signaled_system_error": 14, "detected_parity_error": 15}
_STATUS_ERRORS_MASK = sum(1 << bit for bit in _STATUS_ERRORS.values())
#: Cache Line Size set for Memory Write and Invalidate when none is set (32 bytes).
DEFAULT_CACHE_LINE = 8

#: 32-bit result counters, reported under their register names.
_COUNTERS = ("data_phases", "transactions", "retries", "disconnects_data",
             "disconnects_nodata", "master_aborts", "target_aborts", "latency_timer_ends",
             "latency_count", "passes_done")
_NONE = 0xFFFF_FFFF


def setting_field(argument):
    """The :class:`~pcispy.csr.map.Field` that the :func:`dma` ``argument`` programs."""
    register, _, field = SETTINGS[argument].partition(".")
    return DMA.register(register).field(field)


def _values_text(argument):
    """The values a setting takes, in words: ``"0..7"``, ``"1..4096, 0 for unlimited"``."""
    field = setting_field(argument)
    if field.legal is not None and field.legal.unlimited:
        return f"{field.legal}, 0 for {field.legal.unlimited}"
    return f"{field.accepted[0]}..{field.accepted[-1]}"


def setting_type(argument, *, parse=None):
    """An argparse ``type`` for the :func:`dma` ``argument``: a number the board takes
    (read by ``parse``, an argparse type, if given)."""
    accepted = setting_field(argument).accepted
    return int_range(accepted[0], accepted[-1], parse=parse)


def _check_settings(values):
    """Raise :class:`PcispyError` for the first of ``values`` ({argument: value}) that its
    field does not accept."""
    for argument, value in values.items():
        accepted = setting_field(argument).accepted
        if value not in accepted:
            raise PcispyError(f"{_SAYS.get(argument, argument)} {value}: the board takes "
                              f"{accepted[0]}..{accepted[-1]}")


def parse_address(text):
    """A bus address: decimal or 0x hex, below 2**64."""
    try:
        value = int(str(text), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an address") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text!r}: a bus address is 0 .. 2**64-1")
    return value


async def _enable_master(transport, *, mwi, cache_line, latency_timer):
    """Command register: bus master and parity response (and MWI enable); Cache Line
    Size and Latency Timer when given (Cache Line Size also when MWI needs one)."""
    command = await transport.config_read(_CFG_COMMAND) & 0xFFFF   # not the W1C Status
    command |= _BUS_MASTER | _PARITY_RESPONSE | (_MWI_ENABLE if mwi else 0)
    # Writing ones to the Status error bits clears them: they then tell about this run.
    await transport.config_write(_CFG_COMMAND, command | _STATUS_ERRORS_MASK << 16)
    word = await transport.config_read(_CFG_LINE)
    if cache_line is None and mwi and word & 0xFF == 0:
        cache_line = DEFAULT_CACHE_LINE
    if latency_timer is None and word >> 8 & 0xFF < MIN_LATENCY_TIMER:
        # As Linux's pci_set_master does: a master with a Latency Timer of (almost) 0
        # gives the bus up at every GNT# change, which measures the arbiter, not the DMA.
        latency_timer = DEFAULT_LATENCY_TIMER
    new = word
    if cache_line is not None:
        new = (new & ~0xFF) | cache_line
    if latency_timer is not None:
        new = (new & ~0xFF00) | latency_timer << 8
    if new != word:
        await transport.config_write(_CFG_LINE, new)
    word = await transport.config_read(_CFG_LINE)
    return {"cache_line": word & 0xFF, "latency_timer": word >> 8 & 0xFF}


def _estimate_clocks(length, width, burst, idle, write, clock_count_floor=32):
    """The fewest clocks the run can take (ideal target): the first poll waits this long,
    so polling does not steal the bus from a run that goes at full speed."""
    phases = max(1, length // (width // 8))
    bursts = -(-phases // burst) if burst else 1
    per_burst = (2 if write else 3) + idle
    return phases + bursts * per_burst + clock_count_floor


async def _wait_done(board, transport, *, estimate, clock_rate, timeout_s):
    """Sleep through the estimate, then poll ``dma.status`` until ``done``; stop the run
    (and say so) when ``timeout_s`` of bus time passed."""
    waited = estimate
    await transport.sleep(estimate / clock_rate)
    interval = max(64, estimate // 16)
    while True:
        status = await board.fields("dma.status")
        refused = [doc for name, doc in _REFUSALS.items() if status[name]]
        if refused and not status["busy"]:
            raise RefusedSetting(f"the board refused the DMA settings: {'; '.join(refused)}")
        if status["done"] and not status["busy"]:
            return status, None
        if waited / clock_rate >= timeout_s:
            await board.write("dma.control", stop=1)
            while (await board.fields("dma.status"))["busy"]:
                await transport.sleep(64 / clock_rate)
            return await board.fields("dma.status"), \
                f"the DMA did not finish within {timeout_s:g} s of bus time; stopped"
        await transport.sleep(interval / clock_rate)
        waited += interval


async def _results(board):
    results = {name: await board.read(f"dma.{name}") for name in _COUNTERS}
    for name in ("clocks", "bus_clocks", "bytes", "gnt_wait_sum", "latency_sum"):
        results[name] = await board.read64(f"dma.{name}")
    for name in ("gnt_wait_min", "gnt_wait_max", "latency_min", "latency_max",
                 "mismatches", "first_mismatch"):
        results[name] = await board.read(f"dma.{name}")
    return results


def _summary(results, clock_rate):
    """Derived figures: MB/s, totals, means; all-ones minima (no sample) become None."""
    clocks = results["clocks"]
    out = dict(results)
    out["mbps"] = round(results["bytes"] * clock_rate / clocks / 1e6, 3) if clocks else 0.0
    out["mbps_owned"] = (round(results["bytes"] * clock_rate / results["bus_clocks"] / 1e6, 3)
                         if results["bus_clocks"] else 0.0)
    out["disconnects"] = results["disconnects_data"] + results["disconnects_nodata"]
    out["aborts"] = results["master_aborts"] + results["target_aborts"]
    for name in ("gnt_wait_min", "latency_min", "first_mismatch"):
        if out[name] == _NONE:
            out[name] = None
    transactions = results["transactions"]
    out["gnt_wait_mean"] = (round(results["gnt_wait_sum"] / transactions, 3)
                            if transactions else None)
    samples = results["latency_count"]
    out["latency_mean"] = round(results["latency_sum"] / samples, 3) if samples else None
    return out


async def dma(transport, *, cmd="MW", addr=None, length=4096, burst=256, idle=0, width=32,
              pattern="counter", seed=1, verify=False, passes=1, irdy_wait=0,
              cache_line=None, latency_timer=None, timeout_s=1.0):
    """Run one DMA; return its settings, every result counter and the data check.

    Arguments mirror ``pcispy dma``: ``cmd`` a key of :data:`COMMANDS`; ``addr`` the bus
    address (None: a host-memory buffer from the transport, filled or checked against the
    pattern); ``length`` bytes per pass; ``burst`` data phases per transaction (0:
    unlimited); ``idle`` extra clocks between bursts; ``width`` 32 or 64; ``pattern`` a
    key of :data:`PATTERNS` with ``seed``; ``verify`` compares read data in the engine;
    ``passes`` over the buffer; ``irdy_wait`` IRDY# wait states per data phase;
    ``cache_line`` (DWORDs) and ``latency_timer`` (clocks) for configuration space;
    ``timeout_s`` of bus time before the run is stopped.

    A setting the board refuses raises :class:`RefusedSetting` naming every reason. A run
    that ends in an abort or a timeout returns its results with ``error`` set.
    """
    try:
        command = COMMANDS[cmd.upper()]
        pattern_kind = PATTERNS[pattern.lower()]
    except KeyError as error:
        raise PcispyError(f"unknown {'command' if cmd.upper() not in COMMANDS else 'pattern'}"
                          f" {error.args[0]!r}") from None
    if width not in (32, 64):
        raise PcispyError(f"width {width}: the bus is 32 or 64 bits wide")
    settings = {"length": length, "burst": burst, "idle": idle, "seed": seed,
                "passes": passes, "irdy_wait": irdy_wait}
    _check_settings(settings)
    # Configuration space bytes, not settings of the dma block.
    for name, value in (("cache line", cache_line), ("latency timer", latency_timer)):
        if value is not None and not 0 <= value <= 255:
            raise PcispyError(f"{name} {value}: the board takes 0..255")
    write = bool(command & 1)
    board = Board(transport)
    identity = await board.identify(drives_bus="pcispy dma")
    rate = identity["clock_hz"]
    config = await _enable_master(transport, mwi=command == COMMANDS["MWI"],
                                  cache_line=cache_line, latency_timer=latency_timer)

    buffer = None
    dwords = length // 4
    checkable = pattern_kind.verifiable and length % 4 == 0 and length > 0
    if addr is None:
        get = transport.io_dma_buffer if command in _IO_COMMANDS else transport.dma_buffer
        buffer = await get(length)
        addr = buffer.bus_address
        if checkable:
            expected = pattern_dwords(pattern_kind, seed, dwords)
            # Reads find the pattern; writes must overwrite its complement.
            fill = expected if not write else [~v & _NONE for v in expected]
            await buffer.write(0, b"".join(v.to_bytes(4, "little") for v in fill))

    await board.write("dma.mode", cmd=command, width64=int(width == 64),
                      pattern=pattern_kind.value, verify=int(verify))
    await board.write("dma.addr_lo", addr & _NONE)
    await board.write("dma.addr_hi", addr >> 32)
    for argument, setting in SETTINGS.items():
        register = setting.partition(".")[0]
        fields = setting_field(argument).encode(settings[argument])
        await board.write(f"dma.{register}", **fields)
    await board.write("dma.status", **_W1C)
    await board.write("dma.control", start=1)
    # No register read until the run can be over: a read would take the bus from the
    # engine and change what is measured. The refusal bits stay until the next start.
    estimate = _estimate_clocks(length, width, burst, idle, write) * max(1, passes)
    status, error = await _wait_done(board, transport, estimate=estimate, clock_rate=rate,
                                     timeout_s=timeout_s)
    results = _summary(await _results(board), rate)
    pci_status = await transport.config_read(_CFG_COMMAND) >> 16
    results["pci_status"] = {name: bool(pci_status >> bit & 1)
                             for name, bit in _STATUS_ERRORS.items()}
    if status["master_abort"]:
        error = f"master abort: no target claimed the address ({addr:#x} onwards)"
    elif status["target_abort"]:
        error = "target abort: the target refused the transfer"

    checked = False
    if buffer is not None and write and checkable and not error:
        data = await buffer.read(0, 4 * dwords)
        got = [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
        bad = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        results["mismatches"] = len(bad)
        results["first_mismatch"] = bad[0] if bad else None
        checked = True
    elif not write and verify:
        checked = True
    return {
        "cmd": COMMAND_MNEMONICS[command], "addr": addr, "length": length, "burst": burst,
        "idle": idle, "width": width, "pattern": pattern_kind.name.lower(), "seed": seed,
        "passes": passes, "irdy_wait": irdy_wait, **config,
        "clock_mhz": identity["clock_mhz"], "clock_hz": rate, "checked": checked,
        **results, "error": error,
    }


def add_dma_arguments(parser, *, single=True):
    """The options ``pcispy dma`` and ``pcispy sweep`` share."""
    parser.add_argument("--len", "--size", dest="length",
                        type=setting_type("length", parse=parse_size), default=4096,
                        metavar="N", help="bytes per pass, K/M suffixes (default 4096)")
    parser.add_argument("--width", type=int, choices=(32, 64), default=32,
                        help="data phase width (64 needs --bus-width 64; default 32)")
    parser.add_argument("--pattern", choices=sorted(PATTERNS), default="counter",
                        help="write data / read reference pattern (default counter)")
    parser.add_argument("--seed-pattern", dest="pattern_seed", type=setting_type("seed"),
                        default=1, metavar="S", help="pattern seed (default 1)")
    parser.add_argument("--cache-line", type=int, metavar="DWORDS",
                        help="set the Cache Line Size (MWI gets 8 when none is set)")
    parser.add_argument("--latency-timer", type=int, metavar="CLOCKS",
                        help="set the Latency Timer")
    parser.add_argument("--timeout", type=positive_seconds, default=1.0, metavar="SECONDS",
                        help="bus time before a run is stopped (default 1)")


def format_result(result):
    """A human-readable report of one run."""
    def minmax(name):
        low, high, mean = (result[f"{name}_min"], result[f"{name}_max"],
                           result[f"{name}_mean"])
        return "-" if low is None else f"{low}/{mean}/{high}"
    lines = [
        f"DMA {result['cmd']} {result['width']}-bit at {result['addr']:#x}: "
        f"{result['bytes']} bytes in {result['clocks']} clocks = {result['mbps']:.1f} MB/s "
        f"at {result['clock_mhz']} MHz (owning the bus {result['bus_clocks']} clocks, "
        f"{result['mbps_owned']:.1f} MB/s)",
        f"  transactions {result['transactions']}, data phases {result['data_phases']}, "
        f"retries {result['retries']}, disconnects {result['disconnects_data']} with data / "
        f"{result['disconnects_nodata']} without, master aborts {result['master_aborts']}, "
        f"target aborts {result['target_aborts']}, latency timer ends "
        f"{result['latency_timer_ends']}",
        f"  GNT# wait min/mean/max {minmax('gnt_wait')} clocks, first-data latency "
        f"min/mean/max {minmax('latency')} clocks",
        "  data: " + (f"{result['mismatches']} mismatched DWORDs" +
                       (f" (first at DWORD {result['first_mismatch']})"
                        if result["first_mismatch"] is not None else "")
                       if result["checked"] else "not checked"),
    ]
    flagged = [name.replace("_", " ") for name, on in result["pci_status"].items() if on]
    if flagged:
        lines.append(f"  PCI status: {', '.join(flagged)}")
    if result["error"]:
        lines.append(f"  error: {result['error']}")
    return "\n".join(lines) + "\n"


class DmaCommand(CliCommand):
    name = "dma"
    help = "run one DMA of the board's bus master and report bytes, clocks, MB/s, counters"
    examples = (
        "pcispy dma --cmd MW --len 1M --burst 256",
        "pcispy --sim=alphastation200 dma --cmd MRM --len 64K --verify",
        "pcispy --bus-width 64 --json dma --cmd MW --width 64 --len 1M",
        "pcispy dma --cmd MWI --len 4K --cache-line 16 --pattern lfsr --seed-pattern 0x1234",
    )

    def add_arguments(self, parser):
        parser.add_argument("--cmd", type=str.upper, choices=list(COMMANDS), default="MW",
                            help="bus command (default MW)")
        parser.add_argument("--addr", type=parse_address, metavar="A",
                            help="bus address (default: a host-memory buffer)")
        parser.add_argument("--burst", type=setting_type("burst"), default=256, metavar="B",
                            help=f"data phases per transaction, {_values_text('burst')} "
                                 "(default 256)")
        parser.add_argument("--idle", type=setting_type("idle"), default=0, metavar="I",
                            help="extra idle clocks between bursts (default 0)")
        parser.add_argument("--verify", action="store_true",
                            help="reads: compare the data with the pattern")
        parser.add_argument("--passes", type=setting_type("passes"), default=1,
                            help="passes over the buffer")
        parser.add_argument("--irdy-wait", type=setting_type("irdy_wait"), default=0,
                            metavar="N", help="IRDY# wait states per data phase "
                                              f"({_values_text('irdy_wait')})")
        add_dma_arguments(parser)

    def run(self, args, out):
        result = run_feature(args, dma, **arguments_of(args))
        if not args.json:
            out.write(format_result(result))
        return result


def arguments_of(args, **overrides):
    """The :func:`dma` arguments of parsed ``pcispy dma``/``sweep`` options."""
    arguments = {"length": args.length, "width": args.width, "pattern": args.pattern,
                 "seed": args.pattern_seed, "cache_line": args.cache_line,
                 "latency_timer": args.latency_timer, "timeout_s": args.timeout}
    for name in ("cmd", "addr", "burst", "idle", "verify", "passes", "irdy_wait"):
        if hasattr(args, name):
            arguments[name] = getattr(args, name)
    arguments.update(overrides)
    return arguments
