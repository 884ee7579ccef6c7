# SPDX-License-Identifier: BSD-2-Clause
"""The PCI pads: I/O flip-flops, polarity, sustained tri-state release and parity.

Everything the board puts on the bus leaves through an output flip-flop, so what a core
presents on ``bus.NAME.o``/``oe`` at a clock edge is on the pin during the *following*
clock. Every input is sampled by an input flip-flop: ``bus.NAME.i`` is the pin value at the
previous edge. The pads also:

- invert the :data:`~pcispy.pci.bus.ACTIVE_LOW` lines, so cores are active-high;
- release sustained tri-state lines the PCI way: when a core stops owning FRAME#, TRDY#,
  ... (``oe`` falls) the pad drives the line deasserted for one more clock, then floats it;
- drive open-drain lines (SERR#, INTx#) low only while asserted, never high;
- generate PAR (and PAR64) for every clock in which the board drove AD: PAR is even parity
  over the AD value the board drove and the C/BE# on the pins in that clock, driven one
  clock later. Cores therefore never drive PAR; ``corrupt_par`` inverts it on demand;
- check received parity: ``par_error`` says that PAR on the pins now disagrees with the AD
  and C/BE# sampled at the previous edge.

The same-clock paths (docs/architecture.md, "I/O timing") are the only uses of
unregistered inputs:

- ``live.frame/irdy/trdy/stop/devsel/gnt``: the handshake lines as on the pins now, for a
  core deciding at this edge what to drive next (advance read data only when IRDY# is
  asserted, end the transaction as FRAME# rises, ...);
- C/BE# into PAR generation (one XOR level: the initiator's byte enables of a read data
  phase are only known in that clock);
- PAR into ``par_error`` (one XOR level: PERR#/SERR# must be driven the clock after PAR).

Lines with a live path use an ``io.Buffer`` with the I/O flip-flops written out here
(``*_out_ff``/``*_oe_ff``/``*_in_ff``) in simulation; on an FPGA platform they use
the platform's I/O-cell flip-flops (the cell backend's ``io_flops``; on an ECP5
:class:`~pcispy.platform.ecp5.iocell.IOCellFlops`), whose output and output-enable registers
are the ECP5 I/O cell's own (the sampled input stays a fabric flip-flop next to the pin:
the I/O cell cannot give both its input register and the live pin to the fabric). Every
other line has all three registers in the I/O cell (``io.FFBuffer`` in simulation; on an
FPGA the backend's I/O-cell flip-flops, whose input register sits behind the input delay
that gives it PCI's zero hold time).
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out

from pcispy.core.live import cells_for
from pcispy.pci.bus import (ACTIVE_LOW, OPEN_DRAIN, PRESENTED_GATED, SUSTAINED_TRISTATE,
                            ADDecision, PCIBusSignature, bus_lines)

__all__ = ["LIVE_LINES", "live_lines", "INPUT_ONLY_LINES", "DECODE_LINES", "JOINED_LINES",
           "PIN_GROUP", "ad_decision_groups", "CORE_GATED_LINES",
           "decode_signature", "simulation_ports", "decided_word", "decided_floats",
           "PCIPads"]

#: Handshake lines offered unregistered (``pads.live.NAME``) for the same-clock paths.
LIVE_LINES = ("frame", "irdy", "trdy", "stop", "devsel", "gnt")


def live_lines(width):
    """The live lines of a ``width``-bit board: a 64-bit master must also know within the
    clock whether ACK64# answered, to move 32 or 64 bits in that data phase."""
    return LIVE_LINES + (("ack64",) if width == 64 else ())

#: Lines the board only ever samples.
INPUT_ONLY_LINES = frozenset({"rst", "gnt", "idsel"})

# Lines read unregistered inside the pads, for parity generation and checking.
_PARITY_LIVE_LINES = frozenset({"cbe", "par", "cbe_hi", "par64"})

#: Lines more than one core drives on the board (the target and the DMA master): the pads
#: take each core's enable (``NAME_oe_by``) and join them in a copy per group of pins on an
#: FPGA, and OR the cores' words as they are, so each core presents 0 where it does not
#: drive (:func:`pcispy.board.top.merge_bus_drivers`).
JOINED_LINES = ("ad", "ad_hi")
#: The group of AD pins each enable copy serves (:class:`PCIPads`'s ``pin_group``) when the
#: platform does not say (its ``pci_pin_group``, set by the boards' pin-outs): a pin pair,
#: the two pins of one I/O tile.
PIN_GROUP = 2


def ad_decision_groups(pin_group=PIN_GROUP):
    """The copies of a master's AD decision pads serving AD in groups of ``pin_group``
    pins take (``master_ad``): one per group of AD[31:0]'s pins, each formed next to
    its pins."""
    if pin_group < 1 or 32 % pin_group:
        raise ValueError(f"AD[31:0] does not split into groups of {pin_group} pins")
    return 32 // pin_group


# How many enables of their own a float copy can join besides ``bus.NAME.oe``.
_MAX_AD_DRIVERS = 2

#: Lines whose core withholds its own enable while ``drive_allowed`` is 0, so that the pads
#: do not gate them, each driven by one core that decides it in the clock the live lines
#: arrive and gates it in its last cell, in the tristate register's polarity (a gate here
#: would be one cell more, docs/timing.md): C/BE# (:class:`~.initiator.Initiator`, after
#: DEVSEL#), SERR# (:class:`~.target.Target`, after the live PAR).
CORE_GATED_LINES = ("cbe", "cbe_hi", "serr")

#: Lines a fast-decode target reads unregistered in the address phase (``pads.decode``).
DECODE_LINES = ("ad", "cbe", "idsel", "req64")


def decode_signature(width=32):
    """The unregistered address-phase lines offered for fast decode (inside-level)."""
    return wiring.Signature({name: Out(bits) for name, bits in bus_lines(width).items()
                             if name in DECODE_LINES})


def simulation_ports(width=32, *, passive=False):
    """``{line: io.SimulationPort}`` for every line of :func:`bus_lines`, pin-level.

    Each port is named after its line, so a converted design exposes ``frame__o``,
    ``frame__oe`` and ``frame__i`` (low = asserted for the active-low lines). Every port
    is bidirectional so that a bus model can treat all lines alike; the pads never enable
    the outputs of the :data:`INPUT_ONLY_LINES`. ``passive``: every port an input, as a
    passive build's pins (only ``i``).
    """
    return {name: io.SimulationPort("i" if passive else "io", bits, name=name)
            for name, bits in bus_lines(width).items()}


def _registered(cells, direction, port):
    """The buffer of a pin read and driven only through registers (domain ``pci``): on an
    FPGA its I/O cell's flip-flops (the input behind the cell backend's zero-hold delay),
    else ``io.FFBuffer``."""
    if cells.fpga:
        return cells.io_flops(direction, port, live=False)
    return io.FFBuffer(direction, port, i_domain="pci",
                       o_domain=None if direction == "i" else "pci")


def decided_word(m, cells, take_high, high, low, others, name):
    """The word AD pins take from a master's decision (``take_high``, one bit, between
    the words ``high`` and ``low``) and the other cores' word ``others`` (ORed, each 0
    where it does not drive): one ``LUT4`` per bit (named ``NAME_bBIT``), the choice
    made in the cell of the join (FPGA only; elsewhere the pads take
    :meth:`~.bus.ADDecision.word`)."""
    return Cat(*(cells.lut4(m, lambda take, high, low, other: (high if take else low) or other,
                            [take_high, high[bit], low[bit], others[bit]], f"{name}_b{bit}")
                 for bit in range(len(others))))


def decided_floats(take_high, high_oe, low_oe, other_oe):
    """The table of an AD enable copy joining a master's decision (``take_high`` and its
    two enables, already permitted) with another core's enable: 1 = float."""
    return not ((high_oe if take_high else low_oe) or other_oe)


class PCIPads(wiring.Component):
    """The I/O cells of one PCI slot, in clock domain ``pci``.

    Ports:
        bus (In, PCIBusSignature(width)): the inside of the pads. For each line the cores
            present ``o`` (inside-level, active-high) and ``oe`` ("own this line"), taken
            at the clock edge and on the pin during the next clock; ``i`` is the pin value
            sampled at the previous edge. On the :data:`~.bus.PRESENTED_GATED` lines ``o``
            must be 0 where ``oe`` is (as :func:`~pcispy.board.top.merge_bus_drivers`
            hands them over): a sustained tri-state line shows ``o`` in its clock of
            deasserted drive. ``par``/``par64`` ``o``/``oe`` are ignored (the
            pads generate parity); input-only lines ignore ``o``/``oe``.
        live (Out): ``frame``, ``irdy``, ``trdy``, ``stop``, ``devsel``, ``gnt``:
            unregistered, inside-level, for the same-clock paths only.
        par_error (Out, 1): PAR on the pins now is not the even parity of AD[31:0] and
            C/BE#[3:0] sampled at the previous edge (live; meaningful only when the
            previous clock was an address or write data phase).
        par64_error (Out, 1): the same for PAR64, AD[63:32], C/BE#[7:4] (64-bit only).
        corrupt_par (In, 1): invert the PAR that will cover the AD value presented on
            ``bus.ad.o`` at this edge.
        corrupt_par64 (In, 1): the same for PAR64 (64-bit only).
        drive_allowed (In, 1, init 1): the pads drive a line only while this is 1 (passive
            mode clears it; from a register). A sustained tri-state line they owned still
            gets its clock of deasserted drive. AD's enable copies apply it themselves, so
            it adds no gate of its own between the cores' enable and the copies. The
            :data:`CORE_GATED_LINES` (C/BE#, SERR#) it leaves to the cores that drive them.
        ad_oe_by (In, ad_drivers): with ``ad_drivers`` only: one AD enable per core that
            drives AD. The pads drive AD while ``bus.ad.oe`` or any of these is 1; on an
            FPGA they join them inside each pin pair's enable copy, so the cores' join
            costs no logic level and no wire of its own (AD's enable is the board's
            longest same-clock decision).
        ad_hi_oe_by (In, ad_drivers): the same for AD[63:32] (64-bit only).
        master_ad (In, ADDecision(ad_decision_groups(pin_group))): with ``master_ad``
            only (32-bit, one ``ad_drivers``): the master's AD[31:0] as a decision between two
            registered words, apart from ``bus.ad`` (the other cores', ORed) and
            ``ad_oe_by`` (the target's enable). The pads make the choice by each pin
            pair's copy of the decision in the cells that join the others, next to the
            pins: per bit one cell for the word, and each pin pair's enable copy. Its
            enables are gated by ``drive_allowed`` before the copy (from registers); the
            copy's four inputs are then the decision and the target's enable, so
            ``ad_oe_by`` is **not** gated by it: the core presenting it gates it itself
            (the target's ``drive_allowed``).
        ad_driven, ad_hi_driven (Out, 1): with ``ad_drivers`` only: the pads drive
            AD[31:0] (AD[63:32]) during this clock (registered; PAR's enable follows it).
            On an FPGA a fabric copy of the first pin pair's tristate register, placed
            with it: who needs to know what is on the pins takes this rather than a
            register of its own at the end of the cores' enable decisions.
        decode (Out, decode_signature(width)): with ``fast_decode`` only: AD[31:0],
            C/BE#[3:0], IDSEL (and REQ64#) unregistered, for a target that decodes the
            address within the address phase (the longest same-clock path of the board).

    Input-only ports (a passive build's, every one an input) make listening pads: only
    ``bus`` (its ``i``, every line from its I/O cell's input flip-flop), no other port.

    Parameters:
        width: 32 or 64.
        ports: ``{line name: io port}`` for every line of ``bus_lines(width)``, at pin
            level (from ``platform.request`` or :func:`simulation_ports`).
        fast_decode: also offer ``decode`` (AD, C/BE#, IDSEL, REQ64# unregistered).
        ad_drivers: 0, 1 or 2: how many cores present their AD enable on ``ad_oe_by``
            rather than ``bus.ad.oe``.
        master_ad: also take a master's AD[31:0] as a decision (``master_ad``): 32-bit,
            with ``ad_drivers=1``.
        pin_group: on an FPGA, the AD pins each enable copy (and decision copy) serves:
            board geometry, the pins the board's wiring puts in one I/O tile
            (:data:`PIN_GROUP`, a pin pair, by default).
    """
    def __init__(self, width, ports, *, fast_decode=False, ad_drivers=0, master_ad=False,
                 pin_group=PIN_GROUP):
        lines = bus_lines(width)
        missing = set(lines) - set(ports)
        if missing:
            raise ValueError(f"PCI pads need a port for every line; missing {sorted(missing)}")
        self.width = width
        self.ports = ports
        self.fast_decode = fast_decode
        self.pin_group = pin_group
        ad_decision_groups(pin_group)      # (a group size that splits AD[31:0])
        self.listen_only = all(port.direction == io.Direction.Input for port in ports.values())
        if self.listen_only:
            if fast_decode or ad_drivers or master_ad:
                raise ValueError("input-only pads (a passive build) drive nothing and offer "
                                 "no live lines: no fast_decode, no ad_drivers, no master_ad")
            super().__init__({"bus": In(PCIBusSignature(width))})
            return
        if not 0 <= ad_drivers <= _MAX_AD_DRIVERS:
            raise ValueError(f"the pads join at most {_MAX_AD_DRIVERS} AD enables of their "
                             f"own, not {ad_drivers}")
        if master_ad and (width, ad_drivers) != (32, 1):
            raise ValueError("a master's AD decision joins one other core's AD enable on a "
                             f"32-bit bus, not {ad_drivers} on a {width}-bit one")
        self.ad_drivers = ad_drivers
        self.master_ad_decided = master_ad
        members = {
            "bus": In(PCIBusSignature(width)),
            "live": Out(wiring.Signature({name: Out(1) for name in live_lines(width)})),
            "par_error": Out(1),
            "corrupt_par": In(1),
            "drive_allowed": In(1, init=1),
        }
        if width == 64:
            members["par64_error"] = Out(1)
            members["corrupt_par64"] = In(1)
        if fast_decode:
            members["decode"] = Out(decode_signature(width))
        if ad_drivers:
            members["ad_oe_by"] = In(ad_drivers)
            members["ad_driven"] = Out(1)
            if width == 64:
                members["ad_hi_oe_by"] = In(ad_drivers)
                members["ad_hi_driven"] = Out(1)
        if master_ad:
            members["master_ad"] = In(ADDecision(ad_decision_groups(pin_group)))
        super().__init__(members)

    def joined_enables(self):
        """``{line: port taking one enable per core}`` of the :data:`JOINED_LINES` this
        bus has (with ``ad_drivers``; else empty)."""
        if not self.ad_drivers:
            return {}
        return {name: getattr(self, f"{name}_oe_by") for name in JOINED_LINES
                if hasattr(self, f"{name}_oe_by")}

    def joined_driven(self):
        """``{line: port}``: whether the pads drive each of the :data:`JOINED_LINES` this
        bus has during this clock (with ``ad_drivers``; else empty)."""
        if not self.ad_drivers:
            return {}
        return {name: getattr(self, f"{name}_driven") for name in JOINED_LINES
                if hasattr(self, f"{name}_driven")}

    def _enables(self, name, line):
        """The enables whose OR owns line ``name``: ``bus.NAME.oe``, and for AD the
        cores' own (``ad_oe_by``)."""
        if self.ad_drivers and name in JOINED_LINES:
            by = getattr(self, f"{name}_oe_by")
            return [line.oe, *(by[i] for i in range(self.ad_drivers))]
        return [line.oe]

    def _next_drive(self, m, name, line, *, allowed=True, cells=None):
        """(value, enable) the pin must show during the next clock, inside-level; with
        ``allowed``, only while ``drive_allowed`` (else the caller applies it). ``cells``:
        a sustained tri-state line's enable is one hand-placed cell (below)."""
        wanted = Cat(*self._enables(name, line)).any()
        permitted = self.drive_allowed if allowed and name not in CORE_GATED_LINES else 1
        oe = wanted & permitted
        if name in INPUT_ONLY_LINES:
            return 0, 0
        if name == "ad" and self.master_ad_decided:
            # The master's decision beside the others (its enables gated here, the
            # target's by the target: on an FPGA the copies, ``decided_floats``, have no
            # input left for it).
            decision = self.master_ad
            return (decision.word() | line.o,
                    ((line.oe | decision.enable()) & permitted) | self.ad_oe_by[0])
        if name in OPEN_DRAIN:
            # Pull low while asserted; never drive the line high.
            return 1, oe & line.o
        if name in SUSTAINED_TRISTATE:
            owned = Signal(name=f"{name}_owned")
            m.d.pci += owned.eq(oe)
            # Released this edge: drive deasserted for one clock (owned), then float.
            # A value presented 0 where it is not owned needs no gate by the enable: the
            # live lines then reach the output register through the cores' choice and
            # ``drive_allowed`` only, not through the choice of the enable as well.
            value = line.o & permitted if name in PRESENTED_GATED else line.o & oe
            if cells is not None:
                # The tristate register's input (1 floats) as one cell of the enable, the
                # permission and the owned register: the enable crosses one cell after
                # the core's choice. Left to synthesis, abc shared the permitted enable
                # between this and the owned register and the pin took two.
                return value, cells.inverse_lut4(m, lambda wanted, allowed, owned, _:
                                                 (wanted and allowed) or owned,
                                                 [wanted, permitted, owned], f"{name}_floats")
            return value, oe | owned
        return line.o, oe

    def _fanned_out_buffers(self, m, cells, name, line, port):
        """AD on an FPGA: registered I/O per pin pair, each pair's output-enable register
        fed by a copy of the enable of its own (a kept ``LUT4``: NAND of the OR of the
        enables and ``drive_allowed``; with ``master_ad`` the master's decision and the
        target's enable). Returns (the word driven, the copies (1: float)).

        One enable reaches all AD pins in the clock it is decided (the target's claim
        of a read; a connector can spread AD over the die). As one net it meets at a
        point between the far pins, which the whole decision must reach first; with a
        copy per pair, the placer puts each copy next to its pins and the one long wire
        runs from the decision to the copies. ``keep`` stops synthesis merging them.
        Each copy holds the enable inverted, as the I/O cell's tristate register takes
        it (1 = float): the buffer's own inversion cancels against it, and no inverter
        LUT sits between a copy and its registers. The cores' enables (``ad_oe_by``) and
        passive mode's ``drive_allowed`` are the copy's inputs rather than gates of their
        own in front of them all."""
        decided = name == "ad" and self.master_ad_decided
        if decided:
            # The master's decision (its copy for each pin pair, formed beside the pins)
            # is made in the cells themselves: per bit the word's choice with the other cores' word, per pair
            # the enable's with the target's. Its enables, from registers, with the other
            # lines' (``bus.ad.oe``) and the permission: the copy's inputs then are the
            # decision and the target's enable.
            decision = self.master_ad
            permitted = {half: Signal(name=f"{name}_{half}_oe_permitted")
                         for half in ("high", "low")}
            for half, signal in permitted.items():
                m.d.comb += signal.eq((getattr(decision, f"{half}_oe") | line.oe)
                                      & self.drive_allowed)
        else:
            value, _ = self._next_drive(m, name, line, allowed=False)
            # Float (1) unless an enable is set and driving is allowed.
            enables = self._enables(name, line)
            enables += [Const(0)] * (_MAX_AD_DRIVERS + 1 - len(enables))
            floats = (lambda a, b, c, allowed: not ((a or b or c) and allowed),
                      [*enables, self.drive_allowed])
        sampled, copies, words = [], [], []
        for low in range(0, len(port), self.pin_group):
            high = min(low + self.pin_group, len(port))
            m.submodules[f"{name}_buffer_{low}"] = buf = _registered(cells, "io",
                                                                    port[low:high])
            if decided:
                take_high = decision.take_high_of(low // self.pin_group)
                words.append(decided_word(m, cells, take_high, decision.high[low:high],
                                          decision.low[low:high], line.o[low:high],
                                          f"{name}_word_{low}"))
                floats = (decided_floats, [take_high, permitted["high"], permitted["low"],
                                           self.ad_oe_by[0]])
            else:
                words.append(value[low:high])
            float_copy = cells.lut4(m, *floats, f"{name}_oe_copy_{low}",
                                    net=f"{name}_float_copy_{low}")
            m.d.comb += [buf.o.eq(words[-1]), buf.oe.eq(~float_copy)]
            sampled.append(buf.i)
            copies.append(float_copy)
        m.d.comb += line.i.eq(Cat(*sampled))
        return Cat(*words), copies

    def elaborate(self, platform):
        m = Module()
        if self.listen_only:
            # A passive build: no core answers or drives the bus, so no line is needed
            # before its input flip-flop. Every pin ends at the one in its I/O cell: no
            # path from a PCI pin reaches the fabric unregistered.
            cells = cells_for(platform)
            for name in bus_lines(self.width):
                port = ~self.ports[name] if name in ACTIVE_LOW else self.ports[name]
                m.submodules[f"{name}_buffer"] = buf = _registered(cells, "i", port)
                m.d.comb += getattr(self.bus, name).i.eq(buf.i)
            return m
        bus = self.bus
        cells = cells_for(platform)
        live_values = {}
        ad_driven = {}       # AD group name -> AD driven during this clock (registered)
        float_copies = {}    # AD group name -> its enable copies (FPGA only)
        enables = {}         # line name -> its enable for the next clock (when not copied)
        driven_words = {}    # line name -> the value its output registers take
        ad_parity = {}       # AD group name -> parity of the driven AD value (registered)
        sampled = {}         # line name -> registered input

        for name in bus_lines(self.width):
            line = getattr(bus, name)
            port = self.ports[name]
            if name in ACTIVE_LOW:
                port = ~port
            # Input-only lines on a bidirectional port (simulation) get an I/O buffer that
            # is never enabled, so the port's output enable is a defined 0.
            direction = "io" if port.direction == io.Direction.Bidir else "i"
            unregistered = name in live_lines(self.width) or name in _PARITY_LIVE_LINES or (
                self.fast_decode and name in DECODE_LINES)
            if unregistered and cells.fpga:
                # On an FPGA the output and enable registers go into the I/O cell.
                cell = cells.io_flops(direction, port)
                m.submodules[f"{name}_buffer"] = cell
                m.d.comb += line.i.eq(cell.i)
                live_values[name] = cell.live
                if direction == "io" and name not in ("par", "par64"):
                    value, enables[name] = self._next_drive(m, name, line, cells=cells)
                    m.d.comb += [cell.o.eq(value), cell.oe.eq(enables[name])]
                if name in ("par", "par64"):
                    sampled[name] = cell
            elif unregistered:
                buf = io.Buffer(direction, port)
                m.submodules[f"{name}_buffer"] = buf
                in_ff = Signal(len(line.i), name=f"{name}_in_ff")
                m.d.pci += in_ff.eq(buf.i)
                m.d.comb += line.i.eq(in_ff)
                live_values[name] = buf.i
                if direction == "io" and name not in ("par", "par64"):
                    out_ff = Signal(len(line.o), name=f"{name}_out_ff")
                    oe_ff = Signal(name=f"{name}_oe_ff")
                    value, enables[name] = self._next_drive(m, name, line)
                    m.d.pci += [out_ff.eq(value), oe_ff.eq(enables[name])]
                    m.d.comb += [buf.o.eq(out_ff), buf.oe.eq(oe_ff)]
                if name in ("par", "par64"):
                    sampled[name] = buf
            elif name in JOINED_LINES and direction == "io" and cells.fpga:
                driven_words[name], float_copies[name] = self._fanned_out_buffers(
                    m, cells, name, line, port)
            else:
                m.submodules[f"{name}_buffer"] = buf = _registered(cells, direction, port)
                m.d.comb += line.i.eq(buf.i)
                if direction == "io":
                    value, enables[name] = self._next_drive(m, name, line)
                    m.d.comb += [buf.o.eq(value), buf.oe.eq(enables[name])]
                    driven_words[name] = value
            if name in ("ad", "ad_hi"):
                # Shadow of the AD output flip-flops, for parity generation.
                driven = Signal(name=f"{name}_driven")
                # A copy of the AD value and the corrupt request: the XOR over them runs
                # in the next clock, not behind the cores' output logic in this one.
                shadow = Signal(len(line.o), name=f"{name}_shadow")
                corrupted = Signal(name=f"{name}_corrupt")
                corrupt = self.corrupt_par if name == "ad" else self.corrupt_par64
                m.d.pci += [shadow.eq(driven_words.get(name, line.o)),
                            corrupted.eq(corrupt)]
                if name in float_copies:
                    # From the first pair's copy: a fabric copy of that pair's tristate
                    # register, placed with it, not a register of its own at the end of
                    # the whole enable decision.
                    released = Signal(name=f"{name}_released", init=1)
                    m.d.pci += released.eq(float_copies[name][0])
                    m.d.comb += driven.eq(~released)
                elif name in enables:
                    m.d.pci += driven.eq(enables[name])
                ad_driven[name] = driven
                ad_parity[name] = shadow.xor() ^ corrupted
                if self.ad_drivers:
                    m.d.comb += getattr(self, f"{name}_driven").eq(driven)

        for name in live_lines(self.width):
            m.d.comb += getattr(self.live, name).eq(live_values[name])
        if self.fast_decode:
            for name in self.decode.signature.members:
                m.d.comb += getattr(self.decode, name).eq(live_values[name])

        groups = [("ad", "cbe", "par", self.par_error)]
        if self.width == 64:
            groups.append(("ad_hi", "cbe_hi", "par64", self.par64_error))
        for ad, cbe, par, error in groups:
            par_buf = sampled[par]
            # Generation: PAR in the next clock covers the AD we drive now and C/BE# now.
            if cells.fpga:
                # The I/O cell's registers are PAR's output flip-flops.
                if par_buf.direction is not io.Direction.Input:
                    m.d.comb += [par_buf.o.eq(ad_parity[ad] ^ live_values[cbe].xor()),
                                 par_buf.oe.eq(ad_driven[ad])]
            else:
                par_out_ff = Signal(name=f"{par}_out_ff")
                par_oe_ff = Signal(name=f"{par}_oe_ff")
                m.d.pci += [
                    par_out_ff.eq(ad_parity[ad] ^ live_values[cbe].xor()),
                    par_oe_ff.eq(ad_driven[ad]),
                ]
                if par_buf.direction is not io.Direction.Input:   # passive: no drivers
                    m.d.comb += [par_buf.o.eq(par_out_ff), par_buf.oe.eq(par_oe_ff)]
            # Checking: PAR now must cover AD and C/BE# sampled at the previous edge.
            # (A kept net on an FPGA: the live PAR meets it in one LUT, after the XOR tree.)
            expected = cells.kept(m, Cat(getattr(bus, ad).i, getattr(bus, cbe).i).xor(),
                                  f"{par}_expected")
            m.d.comb += error.eq(expected ^ live_values[par])
        return m
