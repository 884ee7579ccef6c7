// SPDX-License-Identifier: BSD-2-Clause
// The exerciser's scratch RAM (BAR2/BAR3 backing store): one write port with byte lanes,
// one registered read port; synthesizable (block RAM) and fast to build in Verilator.
// Hand-written because Amaranth emits one initialiser line per word. `bd_storage` is the
// backdoor the simulated system's Python reads and writes to check every PIO.
module pcispy_scratch_ram #(
    parameter WIDTH = 32,
    parameter ABITS = 12
) (
    input  wire                 clk,
    input  wire [ABITS-1:0]     w_addr,
    input  wire [WIDTH-1:0]     w_data,
    input  wire [WIDTH/8-1:0]   w_en,
    input  wire [ABITS-1:0]     r_addr,
    output reg  [WIDTH-1:0]     r_data
);
    reg [WIDTH-1:0] bd_storage [0:(1<<ABITS)-1];
    integer lane;
    always @(posedge clk) begin
        for (lane = 0; lane < WIDTH/8; lane = lane + 1)
            if (w_en[lane]) bd_storage[w_addr][lane*8 +: 8] <= w_data[lane*8 +: 8];
        r_data <= bd_storage[r_addr];
    end
endmodule
