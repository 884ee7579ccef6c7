// SPDX-License-Identifier: BSD-2-Clause
// The simulated system's bus reset as a register that changes only when the model's
// pci_rst port does (pcispy/sim/system.py). Amaranth builds every register's synchronous
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
// one falling clock edge before the rising edge that uses them) and at each clock edge.
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
    always @(posedge we or negedge we or posedge re or negedge re or posedge clk) o <= i;
endmodule
