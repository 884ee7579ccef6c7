# SPDX-License-Identifier: BSD-2-Clause
"""Any PCI core in slot 0 of the simulated system, described once, without editing pcispy.

Slot 0 takes a component that follows the *slot-0 contract*:

- ``ports``: ``{line: port}`` for every line of :func:`~pcispy.pci.bus.bus_lines`, each
  with ``o``, ``oe`` and ``i`` signals at pin level (an active-low line reads 0 while
  asserted), ``oe`` as wide as ``o`` (the line counts as driven when any bit is);
- ``sram_ports``: None (only pcispy's board has an SRAM trace memory);
- its logic in the ``pci`` clock domain (the bus clock, reset by RST#); RST# itself is
  ``ports["rst"].i`` (pin level: 0 while reset is asserted).

:class:`~pcispy.board.top.PCIBoard` is the default such component. An Amaranth core of
your own follows the same contract; a Verilog core is described by a
:class:`CoreDescription` (loadable from a JSON or TOML file) and adapted to the contract
by :class:`VerilogCore`. Either is chosen per run with ``SystemConfig(core=...)``.

Memories that Python should reach (``backdoor`` access from cocotb) must be named
``bd_*`` in the core's Verilog: only those are made public in the model.

A Verilog core whose PCI pins are ``inout`` ports (as on a chip) names them in ``io`` of
its pin map, with ``oe`` naming the signal inside the core that enables the port's
driver. :class:`VerilogCore` then puts the core in a small generated Verilog module
(:func:`inout_wrapper`): each inout port sits on a net that the rest of the bus drives
weakly (``assign (weak0, weak1)``), so the core reads the bus when it does not drive and
its own value when it does (Verilator resolves the strengths), and the enable is read
from inside the core by a hierarchical name. The resolver and the checker thus still see
who drives each line, as for o/oe/i ports. (Verilator offers no way to read a tristate
driver's enable through a port that other drivers share: ``x !== 1'bz`` counts the
weak driver too.)
"""

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from amaranth import ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import io, wiring

from pcispy.pci.bus import bus_lines

__all__ = ["PinMap", "CoreDescription", "VerilogCore", "core_component", "inout_wrapper"]

#: A signal inside the core that an inout pin's ``oe`` may name: a Verilog identifier,
#: or a dotted path into its submodules.
_SIGNAL_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*")

#: Lines a core may drive without an output enable: point-to-point outputs of a slot.
_ALWAYS_DRIVEN = frozenset({"req"})


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
        """Raise ValueError naming what is wrong with this map on a ``width``-bit bus."""
        if self.line not in bus_lines(64):
            raise ValueError(f"pin map: {self.line!r} is not a PCI line "
                             f"({', '.join(bus_lines(64))})")
        if self.io:
            if self.o or self.i:
                raise ValueError(f"pin map of {self.line}: an inout port (io) is the line's "
                                 f"output and input: no o or i beside it")
            if self.oe and not _SIGNAL_PATH.fullmatch(self.oe):
                raise ValueError(f"pin map of {self.line}: oe {self.oe!r} is not a signal "
                                 f"name inside the core")
        elif self.o and not self.oe and self.line not in _ALWAYS_DRIVEN:
            raise ValueError(f"pin map of {self.line}: an output needs its output enable "
                             f"(only {', '.join(sorted(_ALWAYS_DRIVEN))} may be always driven)")
        if self.oe and not self.o and not self.io:
            raise ValueError(f"pin map of {self.line}: an output enable without an output")
        if self.line not in bus_lines(width) and (self.o or self.i or self.io):
            raise ValueError(f"pin map of {self.line}: not a line of a {width}-bit bus")


@dataclass(frozen=True)
class CoreDescription:
    """A Verilog PCI core as slot 0 of the simulated system. Hashable; every field is part
    of the model's identity (cache key), and the bytes of every file Verilator read are too.

    Paths are absolute once loaded (:meth:`from_dict` resolves them against ``base``, the
    description file's folder). ``defines`` and ``parameters`` are ``(name, value)`` pairs
    (a define's value may be ""), ``verilator_flags`` extra Verilator options (they apply
    to the whole model, e.g. ``--no-timing`` for ``<= #1`` delays). ``clock`` and ``reset``
    are the core's clock and reset input ports; ``reset_active_low`` says ``reset`` takes
    RST# as it is on the pin (0 = reset). ``pins`` maps PCI lines (:class:`PinMap`);
    lines not mapped are neither driven nor read by the core.
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

    @property
    def label(self):
        return self.name or self.top

    @property
    def master(self):
        """The core can be a bus master: its pins drive REQ# and read GNT#."""
        pins = {pin.line: pin for pin in self.pins}
        req, gnt = pins.get("req"), pins.get("gnt")
        return bool(req and (req.o or req.io and req.oe) and gnt and (gnt.i or gnt.io))

    def check(self, width):
        """Raise ValueError if the description cannot sit on a ``width``-bit bus."""
        if self.width > width:
            raise ValueError(f"core {self.label}: a {self.width}-bit core on a {width}-bit bus")
        lines = [pin.line for pin in self.pins]
        twice = sorted({line for line in lines if lines.count(line) > 1})
        if twice:
            raise ValueError(f"core {self.label}: lines mapped twice: {', '.join(twice)}")
        for pin in self.pins:
            pin.check(width)
        inputs = [pin.i for pin in self.pins if pin.i] + [self.clock, self.reset]
        shared = sorted({port for port in inputs if inputs.count(port) > 1})
        if shared:
            raise ValueError(f"core {self.label}: input ports used twice: {', '.join(shared)}")
        inouts = [pin.io for pin in self.pins if pin.io]
        ports = inouts + inputs + [port for pin in self.pins for port in (pin.o, pin.oe)
                                   if port and not pin.io]
        shared = sorted({port for port in inouts if ports.count(port) > 1})
        if shared:
            raise ValueError(f"core {self.label}: inout ports used twice: {', '.join(shared)}")

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
        from pcispy.sim.verilate import BUILD_ROOT
        text = inout_wrapper(self)
        path = BUILD_ROOT / "cores" / f"{_wrapper_module(self)}.v"
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
        taken from ``base`` (default: the current folder)."""
        if isinstance(data, cls):
            return data
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"core description: unknown keys {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        base = Path(base or ".").resolve()
        values = dict(data)
        for key in ("sources", "include_dirs"):
            values[key] = tuple(str((base / path).resolve()) for path in values.get(key, ()))
        for key in ("defines", "parameters"):
            pairs = values.get(key, ())
            pairs = pairs.items() if isinstance(pairs, dict) else pairs
            values[key] = tuple((str(name), value) for name, value in pairs)
        values["verilator_flags"] = tuple(values.get("verilator_flags", ()))
        pins = values.get("pins", ())
        if isinstance(pins, dict):
            pins = [{"line": line, **spec} for line, spec in pins.items()]
        values["pins"] = tuple(PinMap(**pin) if isinstance(pin, dict) else pin for pin in pins)
        return cls(**values)

    @classmethod
    def load(cls, path):
        """The description in the JSON (``.json``) or TOML (any other suffix) file ``path``;
        its relative paths are relative to the file's folder."""
        path = Path(path)
        raw = path.read_bytes()
        data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
        return cls.from_dict(data, base=path.parent)


class VerilogCore(wiring.Component):
    """A :class:`CoreDescription`'s Verilog core adapted to the slot-0 contract.

    ``ports`` are pin-level :class:`~amaranth.lib.io.SimulationPort`\\s, one per line of a
    ``width``-bit bus; the core's top module is instantiated in the ``pci`` domain with
    its parameters, its clock on the bus clock and its reset on RST# (inverted for an
    active-high reset). Lines the core does not drive have their enables at 0. A core
    with inout ports is instantiated through its generated wrapper (:func:`inout_wrapper`,
    a source of the model: :meth:`CoreDescription.model_sources`), which sets the
    parameters itself.
    """

    def __init__(self, description, width=32):
        try:
            description.check(width)
        except ValueError:
            # Never built, so never elaborated: no "created but never used" warning.
            self._MustUse__silence = True
            raise
        self.description = description
        self.width = width
        self.ports = {name: io.SimulationPort("io", bits, name=f"core_{name}")
                      for name, bits in bus_lines(width).items()}
        self.sram_ports = None
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        desc = self.description
        rst_pin = self.ports["rst"].i
        inputs = {desc.clock: ClockSignal("pci"),
                  desc.reset: rst_pin if desc.reset_active_low else ~rst_pin}
        # One signal per output port: a core may share an enable between lines (TRDY#,
        # STOP# and DEVSEL# often have one), and an Instance port connects once.
        outputs = {}

        def output(port, bits):
            if port not in outputs:
                outputs[port] = Signal(bits, name=f"core_out_{port}")
            return outputs[port]

        mapped = {pin.line: pin for pin in desc.pins}
        for line, port in self.ports.items():
            pin = mapped.get(line)
            bits = len(port.o)
            if pin is None:
                m.d.comb += port.oe.eq(0)
                continue
            if pin.io:
                # The generated wrapper's ports for the inout: the bus in, the net out, and
                # the enable already reduced to one bit of the right polarity.
                inputs[f"{pin.io}__bus"] = port.i
                m.d.comb += port.o.eq(output(f"{pin.io}__o", bits))
                drives = output(f"{pin.io}__oe", 1) if pin.oe else Const(0)
                m.d.comb += port.oe.eq(drives.replicate(bits))
                continue
            if pin.i:
                inputs[pin.i] = port.i
            if not pin.o:
                m.d.comb += port.oe.eq(0)
                continue
            m.d.comb += port.o.eq(output(pin.o, bits))
            if pin.oe:
                enable = output(pin.oe, pin.oe_bits)
                drives = (~enable).any() if pin.oe_active_low else enable.any()
            else:
                drives = Const(1)
            m.d.comb += port.oe.eq(drives.replicate(bits))
        connections = {f"i_{name}": value for name, value in inputs.items()}
        connections.update({f"o_{name}": value for name, value in outputs.items()})
        if desc.has_inouts:
            # The wrapper sets the parameters itself (its text is part of the model).
            m.submodules.core = Instance(_wrapper_module(desc), **connections)
        else:
            connections.update({f"p_{name}": value for name, value in desc.parameters})
            m.submodules.core = Instance(desc.top, **connections)
        return m


def _wrapper_module(description):
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
        f"// Generated by pcispy (pcispy/sim/core.py) for core {description.label}: its",
        "// inout ports as output / enable / input ports for slot 0.",
        f"module {_wrapper_module(description)} (",
        declarations,
        ");",
        *body,
        f"    {instance}",
        "        " + ",\n        ".join(connections),
        "    );",
        "endmodule",
        ""])


def core_component(core, width):
    """The slot-0 component ``SystemConfig.core`` names: a :class:`CoreDescription`'s
    :class:`VerilogCore`, or for ``"module:function"`` what ``function(width)`` returns
    (an Amaranth component that keeps the slot-0 contract)."""
    if isinstance(core, CoreDescription):
        return VerilogCore(core, width)
    import importlib
    module_name, _, function = core.partition(":")
    return getattr(importlib.import_module(module_name), function)(width)
