# SPDX-License-Identifier: BSD-2-Clause
"""Any PCI core in slot 0 of the simulated system, described once, without editing pcispy.

Slot 0 takes a component that follows the *slot-0 contract*:

- ``ports``: ``{line: port}`` for every line of :func:`~pcispy.pci.codes.bus_lines`, each
  with ``o``, ``oe`` and ``i`` signals at pin level (an active-low line reads 0 while
  asserted), ``oe`` as wide as ``o`` (the line counts as driven when any bit is);
- ``sram_ports``: None (only pcispy's board has an SRAM trace memory);
- its logic in the ``pci`` clock domain (the bus clock, reset by RST#); RST# itself is
  ``ports["rst"].i`` (pin level: 0 while reset is asserted).

:class:`~pcispy.board.top.PCIBoard` is the default such component. An Amaranth core of
your own follows the same contract; a Verilog core is described by a
:class:`CoreDescription` (loadable from a JSON or TOML file) and adapted to the contract
by :class:`~pcispy.sim.verilog_core.VerilogCore`. Either is chosen per run with
``SystemConfig(core=...)``. A description is data (no Amaranth): the command line reads one
to start or check a session; its adapter, the gateware, is pcispy/sim/verilog_core.py.

Memories that Python should reach (``backdoor`` access from cocotb) must be named
``bd_*`` in the core's Verilog: only those are made public in the model.

A Verilog core whose PCI pins are ``inout`` ports (as on a chip) names them in ``io`` of
its pin map, with ``oe`` naming the signal inside the core that enables the port's
driver. :class:`~pcispy.sim.verilog_core.VerilogCore` then puts the core in a small
generated Verilog module (:func:`inout_wrapper`): each inout port sits on a net that the
rest of the bus drives weakly (``assign (weak0, weak1)``), so the core reads the bus when
it does not drive and its own value when it does (Verilator resolves the strengths), and
the enable is read from inside the core by a hierarchical name. The resolver and the
checker thus still see who drives each line, as for o/oe/i ports. (Verilator offers no way
to read a tristate driver's enable through a port that other drivers share:
``x !== 1'bz`` counts the weak driver too.)
"""

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from pcispy.pci.codes import bus_lines
from pcispy.sim import verilate

__all__ = ["PinMap", "CoreDescription", "DescriptionError", "MasterHook", "HOOK_VALUES",
           "inout_wrapper", "wrapper_module"]

#: A signal inside the core that an inout pin's ``oe`` may name: a Verilog identifier,
#: or a dotted path into its submodules.
_SIGNAL_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*")

#: Lines a core may drive without an output enable: point-to-point outputs of a slot.
_ALWAYS_DRIVEN = frozenset({"req"})

#: A Verilog identifier (a module, a port, a parameter, a define).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
#: Verilog comments (a port named only in a comment is no port).
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class DescriptionError(ValueError):
    """A mistake in a core description: the message names the field and what is wrong
    with it (``field: problem``), in one line."""

    def __init__(self, where, problem):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem)


@dataclass(frozen=True)
class PinMap:
    """How one PCI line reaches the core's ports, at pin level (active-low lines low when
    asserted, as on the connector).

    ``o``/``oe``/``i`` name the core's output, output-enable and input ports for the line
    (any may be empty: a line the core only reads has only ``i``; REQ#, always driven by
    its master, may have ``o`` alone). ``oe_active_low`` says the enable drives the line
    while 0. ``oe_bits`` is the enable port's width (a per-bit enable counts as driving
    the line when any bit drives).

    Or ``io`` names the core's ``inout`` port for the line (then no ``o``/``i``), and
    ``oe`` the signal *inside* the core's top module (a net, a register or a port; a
    dotted path reaches into its submodules) that enables that port's driver; without
    ``oe`` the core never drives the line.
    """
    line: str
    o: str = ""
    oe: str = ""
    i: str = ""
    oe_active_low: bool = False
    oe_bits: int = 1
    io: str = ""

    def check(self, width):
        """Raise :class:`DescriptionError` naming what is wrong with this map on a
        ``width``-bit bus."""
        where = f"pins.{self.line}"
        if self.line not in bus_lines(64):
            raise DescriptionError("pins", f"{self.line!r} is not a PCI line "
                                   f"({', '.join(bus_lines(64))})")
        if self.io:
            if self.o or self.i:
                raise DescriptionError(where, "an inout port (io) is the line's output and "
                                       "input: no o or i beside it")
            if self.oe and not _SIGNAL_PATH.fullmatch(self.oe):
                raise DescriptionError(f"{where}.oe", f"{self.oe!r} is not a signal name "
                                       "inside the core")
        elif self.o and not self.oe and self.line not in _ALWAYS_DRIVEN:
            raise DescriptionError(where, "an output needs its output enable (oe; only "
                                   f"{', '.join(sorted(_ALWAYS_DRIVEN))} may be always driven)")
        if self.oe and not self.o and not self.io:
            raise DescriptionError(where, "an output enable (oe) without an output (o)")
        if self.line not in bus_lines(width) and (self.o or self.i or self.io):
            raise DescriptionError(where, f"not a line of a {width}-bit bus")

    @classmethod
    def from_dict(cls, line, spec):
        """The map of ``line`` from a description's ``pins`` entry ``spec`` (a table of
        ``o``, ``oe``, ``i``, ``io``, ``oe_active_low``, ``oe_bits``), every value checked
        for its kind (:class:`DescriptionError` naming the field)."""
        where = f"pins.{line}"
        if not isinstance(spec, dict):
            raise DescriptionError(where, "must be a table of o, oe, i, io, oe_active_low, "
                                   f"oe_bits, not {spec!r}")
        known = [f.name for f in fields(cls) if f.name != "line"]
        unknown = sorted(set(spec) - set(known))
        if unknown:
            raise DescriptionError(where, f"unknown key {', '.join(map(repr, unknown))} "
                                   f"(known: {', '.join(known)})")
        for key in ("o", "oe", "i", "io"):
            value = spec.get(key, "")
            pattern = _SIGNAL_PATH if key == "oe" else _IDENTIFIER
            if not isinstance(value, str) or value and not pattern.fullmatch(value):
                raise DescriptionError(f"{where}.{key}", f"{value!r} is not a port name")
        if not isinstance(spec.get("oe_active_low", False), bool):
            raise DescriptionError(f"{where}.oe_active_low", "must be true or false")
        bits = spec.get("oe_bits", 1)
        if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 64:
            raise DescriptionError(f"{where}.oe_bits", f"must be a whole number of bits "
                                   f"(1-64), not {bits!r}")
        return cls(line=line, **spec)


#: The values a master hook's register write may take besides a number: the host-memory
#: buffer's bus address and its size in bytes.
HOOK_VALUES = ("buffer", "buffer_bytes")


@dataclass(frozen=True)
class MasterHook:
    """How ``pcispy sim-test`` makes a core a bus master (the description's ``master``).

    Either ``routine``, a Python coroutine function named ``"file.py:function"`` (the file
    relative to the description) or ``"package.module:function"``, called as ``await
    function(run)`` with a :class:`~pcispy.sim.coretest.MasterRun` (the system, the core's
    BARs, the host-memory buffer), returning None or a dict of what it wants reported; or
    ``writes``, a register sequence: ``(bar, offset, value)`` 32-bit memory writes through
    the host bridge, ``value`` a number or one of :data:`HOOK_VALUES`, then ``done``
    ``(bar, offset, mask, value)``: the word read there until ``word & mask == value``.
    ``buffer_bytes`` is the host-memory buffer's size, ``timeout_clocks`` how long the
    core may take.
    """
    routine: str = ""
    writes: tuple = ()
    done: tuple = ()
    buffer_bytes: int = 4096
    timeout_clocks: int = 200_000

    @classmethod
    def from_dict(cls, spec, base):
        """The hook of a description's ``master`` table ``spec``; a routine's file is taken
        from ``base`` (the description's folder). Raises :class:`DescriptionError`."""
        if not isinstance(spec, dict):
            raise DescriptionError("master", f"must be a table (routine, or writes and "
                                   f"done), not {spec!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(spec) - set(known))
        if unknown:
            raise DescriptionError("master", f"unknown key {', '.join(map(repr, unknown))} "
                                   f"(known: {', '.join(known)})")
        routine = spec.get("routine", "")
        if not isinstance(routine, str):
            raise DescriptionError("master.routine", f"must be \"file.py:function\" or "
                                   f"\"module:function\", not {routine!r}")
        if bool(routine) == bool(spec.get("writes")):
            raise DescriptionError("master", "give either routine or writes (with done)")
        if routine:
            where, _, function = routine.rpartition(":")
            if not where or not function.isidentifier():
                raise DescriptionError("master.routine", f"{routine!r} is not "
                                       "\"file.py:function\" or \"module:function\"")
            if where.endswith(".py"):
                path = (Path(base) / where).resolve()
                if not path.is_file():
                    raise DescriptionError("master.routine", f"{path} does not exist")
                routine = f"{path}:{function}"
        writes = tuple(_register_access(f"master.writes[{i}]", write, ("bar", "offset", "value"))
                       for i, write in enumerate(spec.get("writes", ())))
        done = spec.get("done", ())
        if writes and not done:
            raise DescriptionError("master.done", "missing: the register to poll until the "
                                   "core is done ({bar, offset, mask, value})")
        done = _register_access("master.done", done, ("bar", "offset", "mask", "value")) \
            if done else ()
        numbers = {}
        for key in ("buffer_bytes", "timeout_clocks"):
            value = spec.get(key, getattr(cls, key))
            if isinstance(value, bool) or not isinstance(value, int) or value < 4:
                raise DescriptionError(f"master.{key}", f"must be a whole number (4 or "
                                       f"more), not {value!r}")
            numbers[key] = value
        if numbers["buffer_bytes"] % 4:
            raise DescriptionError("master.buffer_bytes", "must be whole DWORDs (a multiple "
                                   "of 4)")
        return cls(routine=routine, writes=writes, done=done, **numbers)


def _register_access(where, spec, keys):
    """A ``{bar, offset, ...}`` table (or a list in that order) of a master hook as a
    tuple in ``keys`` order, each value checked."""
    if isinstance(spec, dict):
        missing = [key for key in keys if key not in spec]
        unknown = sorted(set(spec) - set(keys))
        if missing or unknown:
            raise DescriptionError(where, f"needs exactly {', '.join(keys)}")
        spec = [spec[key] for key in keys]
    if not isinstance(spec, (list, tuple)) or len(spec) != len(keys):
        raise DescriptionError(where, f"must be {{{', '.join(keys)}}}, not {spec!r}")
    for key, value in zip(keys, spec):
        number = isinstance(value, int) and not isinstance(value, bool)
        if key == "value" and len(keys) == 3 and value in HOOK_VALUES:
            continue
        if not number or value < 0 or value > 0xFFFF_FFFF:
            also = f" or one of {', '.join(HOOK_VALUES)}" if key == "value" and \
                len(keys) == 3 else ""
            raise DescriptionError(f"{where}.{key}", f"must be a 32-bit number{also}, "
                                   f"not {value!r}")
    bar, offset = spec[0], spec[1]
    if bar > 5:
        raise DescriptionError(f"{where}.bar", f"must be a BAR number 0-5, not {bar}")
    if offset % 4:
        raise DescriptionError(f"{where}.offset", f"{offset:#x} is not DWORD aligned")
    return tuple(spec)


def _listed_pin(spec):
    """A :class:`PinMap` from an entry of ``pins`` given as a list: a table with ``line``."""
    if not isinstance(spec, dict) or "line" not in spec:
        raise DescriptionError("pins", f"a listed pin map is a table with its line, not "
                               f"{spec!r}")
    return PinMap.from_dict(spec["line"], {k: v for k, v in spec.items() if k != "line"})


def _text(value, where, pattern=_IDENTIFIER, what="a Verilog name"):
    """``value`` if it is a string ``pattern`` matches, else a :class:`DescriptionError`."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise DescriptionError(where, f"must be {what}, not {value!r}")
    return value


def _strings(value, where):
    """``value`` as a tuple of strings (a list of them in the file)."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or \
            not all(isinstance(item, str) and item for item in value):
        raise DescriptionError(where, f"must be a list of strings, not {value!r}")
    return tuple(value)


def _pairs(value, where, values):
    """A ``{NAME: value}`` table (or list of pairs) as ``(name, value)`` pairs; ``values``
    the kinds a value may be."""
    pairs = value.items() if isinstance(value, dict) else value
    try:
        pairs = [(name, item) for name, item in pairs]
    except (TypeError, ValueError):
        raise DescriptionError(where, f"must be a table of NAME = value, not {value!r}") \
            from None
    for name, item in pairs:
        _text(name, f"{where}.{name}" if isinstance(name, str) else where)
        if not isinstance(item, values):
            raise DescriptionError(f"{where}.{name}", f"must be a number, true/false or a "
                                   f"string, not {item!r}")
    return tuple(pairs)


@dataclass(frozen=True)
class CoreDescription:
    """A Verilog PCI core as slot 0 of the simulated system. Hashable; every field but the
    test settings (``ram_bars``, ``master``) is part of the model's identity (cache key),
    and the bytes of every file Verilator read are too.

    Paths are absolute once loaded (:meth:`from_dict` resolves them against ``base``, the
    description file's folder). ``defines`` and ``parameters`` are ``(name, value)`` pairs
    (a define's value may be ""), ``verilator_flags`` extra Verilator options (they apply
    to the whole model, e.g. ``--no-timing`` for ``<= #1`` delays). ``clock`` and ``reset``
    are the core's clock and reset input ports; ``reset_active_low`` says ``reset`` takes
    RST# as it is on the pin (0 = reset). ``pins`` maps PCI lines (:class:`PinMap`);
    lines not mapped are neither driven nor read by the core.

    What ``pcispy sim-test`` does with the core (no part of the model): ``ram_bars``, the
    memory BARs that are RAM, which the checks write and read back (None: probe each,
    :mod:`pcispy.sim.coretest` says how); ``master``, a :class:`MasterHook` that makes the
    core a bus master.
    """
    top: str
    sources: tuple
    pins: tuple
    clock: str = "clk"
    reset: str = "rst_n"
    reset_active_low: bool = True
    include_dirs: tuple = ()
    defines: tuple = ()
    parameters: tuple = ()
    verilator_flags: tuple = ()
    #: Shown in model names (build/sim/<system>_core-<name>-<hash>/); the top by default.
    name: str = ""
    #: The bus width the core has (32 or 64); the system's width must be at least this.
    width: int = 32
    ram_bars: tuple = field(default=None, repr=False, compare=False)
    master: MasterHook = field(default=None, repr=False, compare=False)

    @property
    def label(self):
        return self.name or self.top

    @property
    def is_master(self):
        """The core can be a bus master: its pins drive REQ# and read GNT#."""
        pins = {pin.line: pin for pin in self.pins}
        req, gnt = pins.get("req"), pins.get("gnt")
        return bool(req and (req.o or req.io and req.oe) and gnt and (gnt.i or gnt.io))

    def check(self, width):
        """Raise :class:`DescriptionError` if the description cannot sit on a
        ``width``-bit bus."""
        if self.width > width:
            raise DescriptionError("width", f"a {self.width}-bit core on a {width}-bit bus "
                                   "(--bus-width 64)")
        lines = [pin.line for pin in self.pins]
        twice = sorted({line for line in lines if lines.count(line) > 1})
        if twice:
            raise DescriptionError("pins", f"lines mapped twice: {', '.join(twice)}")
        for pin in self.pins:
            pin.check(width)
        inputs = [pin.i for pin in self.pins if pin.i] + [self.clock, self.reset]
        shared = sorted({port for port in inputs if inputs.count(port) > 1})
        if shared:
            raise DescriptionError("pins", f"input ports used twice: {', '.join(shared)}")
        inouts = [pin.io for pin in self.pins if pin.io]
        ports = inouts + inputs + [port for pin in self.pins for port in (pin.o, pin.oe)
                                   if port and not pin.io]
        shared = sorted({port for port in inouts if ports.count(port) > 1})
        if shared:
            raise DescriptionError("pins", f"inout ports used twice: {', '.join(shared)}")
        if self.master is not None and not self.is_master:
            raise DescriptionError("master", "the core's pins do not make it a master: "
                                   "map req (o) and gnt (i)")

    def check_sources(self):
        """Raise :class:`DescriptionError` unless every source file and include folder
        exists, one of the sources declares the ``top`` module, and every port the
        description names appears in the sources (or the files of the include folders):
        the mistakes a Verilator build would only find minutes later."""
        if not self.sources:
            raise DescriptionError("sources", "no Verilog file named")
        for path in self.sources:
            if not Path(path).is_file():
                raise DescriptionError("sources", f"{path} does not exist")
        for path in self.include_dirs:
            if not Path(path).is_dir():
                raise DescriptionError("include_dirs", f"{path} is not a folder")
        texts = [_COMMENTS.sub(" ", Path(path).read_bytes().decode("latin-1"))
                 for path in self.sources]
        modules = [name for text in texts
                   for name in re.findall(r"^\s*(?:macro)?module\s+([A-Za-z_][\w$]*)",
                                          text, re.M)]
        if self.top not in modules:
            shown = ", ".join(modules[:8]) + (", ..." if len(modules) > 8 else "")
            raise DescriptionError("top", f"no module {self.top} in the sources "
                                   f"(they declare: {shown or 'no module'})")
        for folder in self.include_dirs:
            texts += [path.read_bytes().decode("latin-1") for path in Path(folder).iterdir()
                      if path.is_file()]
        code = _COMMENTS.sub(" ", "\n".join(texts))
        words = set(re.findall(r"[A-Za-z_][\w$]*", code))
        named = [("clock", self.clock), ("reset", self.reset)]
        for pin in self.pins:
            named += [(f"pins.{pin.line}.{key}", getattr(pin, key).rpartition(".")[2])
                      for key in ("o", "oe", "i", "io") if getattr(pin, key)]
        for field_name, port in named:
            if port not in words:
                raise DescriptionError(field_name, f"{port} appears nowhere in the sources")

    @property
    def has_inouts(self):
        """Some line reaches the core through an inout port."""
        return any(pin.io for pin in self.pins)

    def model_sources(self):
        """The Verilog files of the model: :attr:`sources`, and for a core with inout
        ports the generated wrapper (:func:`inout_wrapper`), written once under
        build/sim/cores/ (its name is its hash, so it is never rewritten with other text)."""
        if not self.has_inouts:
            return list(self.sources)
        text = inout_wrapper(self)
        path = verilate.BUILD_ROOT / "cores" / f"{wrapper_module(self)}.v"
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}")
            partial.write_text(text)
            partial.replace(path)
        return [*self.sources, str(path)]

    @classmethod
    def from_dict(cls, data, base=None):
        """A description from plain data (a parsed JSON/TOML file, or ``asdict`` of one):
        lists become tuples, ``defines``/``parameters`` may be tables, ``pins`` a table of
        ``line: {o, oe, i, ...}`` or a list of maps with ``line``; relative paths are
        taken from ``base`` (default: the current folder). Every value is checked for its
        kind: a mistake raises :class:`DescriptionError` naming the field."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise DescriptionError("", "a core description is a table of keys (top, "
                                   "sources, pins, ...)")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise DescriptionError("", f"unknown key {', '.join(map(repr, unknown))} "
                                   f"(known: {', '.join(known)})")
        missing = [key for key in ("top", "sources", "pins") if key not in data]
        if missing:
            raise DescriptionError(missing[0], "missing (every description names top, "
                                   "sources and pins)")
        base = Path(base or ".").resolve()
        values = dict(data)
        values["top"] = _text(data["top"], "top")
        for key in ("clock", "reset"):
            if key in data:
                values[key] = _text(data[key], key)
        for key in ("sources", "include_dirs"):
            values[key] = tuple(str((base / path).resolve())
                                for path in _strings(data.get(key, ()), key))
        values["defines"] = _pairs(data.get("defines", ()), "defines", (str, int))
        values["parameters"] = _pairs(data.get("parameters", ()), "parameters",
                                      (str, int, bool))
        values["verilator_flags"] = _strings(data.get("verilator_flags", ()),
                                             "verilator_flags")
        if not isinstance(data.get("reset_active_low", True), bool):
            raise DescriptionError("reset_active_low", "must be true or false")
        if not isinstance(data.get("name", ""), str):
            raise DescriptionError("name", f"must be a string, not {data['name']!r}")
        if data.get("width", 32) not in (32, 64) or isinstance(data.get("width"), bool):
            raise DescriptionError("width", f"must be 32 or 64, not {data['width']!r}")
        pins = data["pins"]
        if isinstance(pins, dict):
            pins = [PinMap.from_dict(line, spec) for line, spec in pins.items()]
        elif isinstance(pins, (list, tuple)):
            pins = [pin if isinstance(pin, PinMap) else _listed_pin(pin) for pin in pins]
        else:
            raise DescriptionError("pins", "must be a table of PCI lines ({o, oe, i} each)")
        for pin in pins:
            if pin.line not in bus_lines(64):
                raise DescriptionError("pins", f"{pin.line!r} is not a PCI line "
                                       f"({', '.join(bus_lines(64))})")
        values["pins"] = tuple(pins)
        ram_bars = data.get("ram_bars")
        if ram_bars is not None:
            if not isinstance(ram_bars, (list, tuple)) or not all(
                    isinstance(bar, int) and not isinstance(bar, bool) and 0 <= bar <= 5
                    for bar in ram_bars):
                raise DescriptionError("ram_bars", f"must be a list of BAR numbers 0-5, "
                                       f"not {ram_bars!r}")
            values["ram_bars"] = tuple(sorted(set(ram_bars)))
        master = data.get("master")
        if master is not None and not isinstance(master, MasterHook):
            values["master"] = MasterHook.from_dict(master, base)
        return cls(**values)

    @classmethod
    def load(cls, path):
        """The description in the JSON (``.json``) or TOML (any other suffix) file ``path``;
        its relative paths are relative to the file's folder. Raises
        :class:`DescriptionError` for a file that cannot be read or parsed, any mistake of
        :meth:`from_dict` and any of :meth:`check_sources`."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise DescriptionError("", f"cannot read it: {error.strerror}") from None
        try:
            data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
        except json.JSONDecodeError as error:
            raise DescriptionError("", f"not valid JSON: {error.msg} at line {error.lineno} "
                                   f"column {error.colno}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise DescriptionError("", f"not valid TOML: {error}") from None
        description = cls.from_dict(data, base=path.parent)
        description.check_sources()
        return description


def wrapper_module(description):
    """The generated inout wrapper's module name: unique per description."""
    digest = hashlib.sha256(repr(description).encode()).hexdigest()[:12]
    return f"pcispy_inout_{digest}"


def _wrapper_ports(description):
    """``{port: (direction, bits)}`` of the slot-0 side of a core with inout ports, in the
    order the wrapper declares them: clock, reset, then per mapped line its ports (an
    inout's as ``<io>__bus`` in, ``<io>__o`` out, ``<io>__oe`` out)."""
    lines = bus_lines(64)
    ports = {description.clock: ("input", 1), description.reset: ("input", 1)}
    for pin in description.pins:
        bits = lines[pin.line]
        if pin.io:
            ports[f"{pin.io}__bus"] = ("input", bits)
            ports[f"{pin.io}__o"] = ("output", bits)
            if pin.oe:
                ports[f"{pin.io}__oe"] = ("output", 1)
            continue
        if pin.i:
            ports[pin.i] = ("input", bits)
        if pin.o:
            ports[pin.o] = ("output", bits)
        if pin.oe:
            ports[pin.oe] = ("output", pin.oe_bits)
    return ports


def _parameter_value(value):
    """A description's parameter value as Verilog text."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def inout_wrapper(description):
    """The Verilog text of the module that adapts a core with inout ports to o/oe/i ports
    (the module docstring says how), instance ``core`` of its top module inside."""
    ports = _wrapper_ports(description)
    declarations = ",\n".join(
        f"    {direction} wire {f'[{bits - 1}:0] ' if bits > 1 else ''}{name}"
        for name, (direction, bits) in ports.items())
    body = []
    connections = [f".{description.clock}({description.clock})",
                   f".{description.reset}({description.reset})"]
    for pin in description.pins:
        if not pin.io:
            connections += [f".{port}({port})" for port in (pin.i, pin.o, pin.oe) if port]
            continue
        bits = bus_lines(64)[pin.line]
        net = f"{pin.io}__net"
        body += [f"    wire {f'[{bits - 1}:0] ' if bits > 1 else ''}{net};",
                 "    // The rest of the bus, weaker than the core's own driver.",
                 f"    assign (weak0, weak1) {net} = {pin.io}__bus;",
                 f"    assign {pin.io}__o = {net};"]
        if pin.oe:
            reduce = "~&" if pin.oe_active_low else "|"
            body.append(f"    assign {pin.io}__oe = {reduce}core.{pin.oe};")
        connections.append(f".{pin.io}({net})")
    parameters = ", ".join(f".{name}({_parameter_value(value)})"
                           for name, value in description.parameters)
    instance = f"{description.top} {f'#({parameters}) ' if parameters else ''}core ("
    return "\n".join([
        f"// Generated by pcispy (pcispy/sim/core_description.py) for core "
        f"{description.label}: its",
        "// inout ports as output / enable / input ports for slot 0.",
        f"module {wrapper_module(description)} (",
        declarations,
        ");",
        *body,
        f"    {instance}",
        "        " + ",\n        ".join(connections),
        "    );",
        "endmodule",
        ""])
