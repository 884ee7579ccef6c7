# SPDX-License-Identifier: BSD-2-Clause
"""The gateware of slot 0 when it is not pcispy's board: :class:`VerilogCore` adapts a
Verilog core, described by a :class:`~pcispy.sim.core_description.CoreDescription`, to the
slot-0 contract (pcispy/sim/core_description.py states it); :func:`core_component` builds
whichever component ``SystemConfig.core`` names.

The description itself is data, apart from this module, so that the command line reads a
core's description (to start or check a session with it) without Amaranth; this module
loads where a system is elaborated (pcispy/sim/pcisystem.py).
"""

import importlib

from amaranth import ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import io, wiring

from pcispy.pci.bus import bus_lines
from pcispy.sim.core_description import CoreDescription, wrapper_module

__all__ = ["VerilogCore", "core_component"]


class VerilogCore(wiring.Component):
    """A :class:`CoreDescription`'s Verilog core adapted to the slot-0 contract.

    ``ports`` are pin-level :class:`~amaranth.lib.io.SimulationPort`\\s, one per line of a
    ``width``-bit bus; the core's top module is instantiated in the ``pci`` domain with
    its parameters, its clock on the bus clock and its reset on RST# (inverted for an
    active-high reset). Lines the core does not drive have their enables at 0. A core
    with inout ports is instantiated through its generated wrapper
    (:func:`~pcispy.sim.core_description.inout_wrapper`, a source of the model:
    :meth:`CoreDescription.model_sources`), which sets the parameters itself.
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
            m.submodules.core = Instance(wrapper_module(desc), **connections)
        else:
            connections.update({f"p_{name}": value for name, value in desc.parameters})
            m.submodules.core = Instance(desc.top, **connections)
        return m


def core_component(core, width):
    """The slot-0 component ``SystemConfig.core`` names: a :class:`CoreDescription`'s
    :class:`VerilogCore`, or for ``"module:function"`` what ``function(width)`` returns
    (an Amaranth component that keeps the slot-0 contract)."""
    if isinstance(core, CoreDescription):
        return VerilogCore(core, width)
    module_name, _, function = core.partition(":")
    return getattr(importlib.import_module(module_name), function)(width)
