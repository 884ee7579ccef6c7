// SPDX-License-Identifier: BSD-2-Clause
// The simulated system's bus reset as a register that changes only when the model's
// pci_rst port does (pcispy/sim/pcisystem.py). Amaranth builds every register's synchronous
// reset into its next-state logic; Verilator evaluates all logic fed by a top-level input
// again on every eval (both clock edges), but logic fed by a register only when that
// register changes. `o` follows `i` in the same time step, so the system sees RST# exactly
// when it saw the port. It starts asserted (every bench holds RST# from time 0) and is
// set again at each clock edge, so a model never reset leaves reset at its first edge.
module pcispy_rst_follow (
    input  wire clk,
    input  wire i,
    output reg  o
);
    initial o = 1'b1;
    always @(posedge i or negedge i or posedge clk) o <= i;
endmodule

// The control port's inputs ({ctl_sel, ctl_addr, ctl_wdata, ctl_we, ctl_re}) likewise,
// taken whenever a write or read strobe changes (pcispy/sim/api.py changes them together,
// one falling clock edge before the rising edge that uses them, and changes nothing
// without a strobe). Not at clock edges: the logic an access feeds is then evaluated at
// the accesses only, not at every clock. (`clk` is unused; the port stays for the
// instance.)
module pcispy_ctl_follow #(
    parameter W = 48
) (
    input  wire         clk,
    input  wire         we,
    input  wire         re,
    input  wire [W-1:0] i,
    output reg  [W-1:0] o
);
    initial o = {W{1'b0}};
    always @(posedge we or negedge we or posedge re or negedge re) o <= i;
endmodule

// A clock gate for an agent of the simulated system (pcispy/sim/bfm/gate.py): `gclk` is
// `clk` in the clocks `en` was high for, judged while `clk` is low (a latch open while
// the clock is low, as in a hardware clock-gating cell), so `gclk` never glitches and an
// enable that changes at a rising edge acts at the next one. Verilator then evaluates the
// agent's registers only at the edges `gclk` has. It starts enabled.
module pcispy_clock_gate (
    input  wire clk,
    input  wire en,
    output wire gclk
);
    reg en_l;
    initial en_l = 1'b1;
    always @(*) if (!clk) en_l = en;
    assign gclk = clk & en_l;
endmodule

// What gated logic sees of its inputs (pcispy/sim/bfm/gate.py): `o` takes `i`
// at each falling clock edge `en` was high for (judged while the clock is high: a latch
// open while it is high), whenever `access` rises (a control-port access to the agent
// begins, at a falling edge) and, with RELOAD, whenever `reload` changes (RST#, which
// Python changes at falling edges too). The inputs change only at rising edges, so in
// every clock the agent's gated clock runs in, `o` is what `i` is at its rising edge;
// and the logic fed from `o` is evaluated only when `o` is loaded, not at every clock.
module pcispy_view #(
    parameter W = 1,
    parameter RELOAD = 0
) (
    input  wire         clk,
    input  wire         en,
    input  wire         access,
    input  wire         reload,
    input  wire [W-1:0] i,
    output reg  [W-1:0] o
);
    reg en_l;
    initial en_l = 1'b1;
    initial o = {W{1'b0}};
    always @(*) if (clk) en_l = en;
    wire fall = ~clk & en_l;
    generate if (RELOAD) begin : with_reload
        always @(posedge fall or posedge access or posedge reload or negedge reload) o <= i;
    end else begin : without_reload
        always @(posedge fall or posedge access) o <= i;
    end endgenerate
endmodule
