// SPDX-License-Identifier: BSD-2-Clause
// Storage of the behavioural asynchronous SRAM (sram.py) for Verilator builds: an
// asynchronous (combinational) read port and a write port clocked by the model. Hand-written
// because Amaranth emits one initialiser line per word. `bd_storage` is the backdoor.
module pcispy_sram_storage #(
    parameter WIDTH = 32,
    parameter ABITS = 16
) (
    input  wire             clk,
    input  wire [ABITS-1:0] r_addr,
    output wire [WIDTH-1:0] r_data,
    input  wire [ABITS-1:0] w_addr,
    input  wire [WIDTH-1:0] w_data,
    input  wire             w_en
);
    reg [WIDTH-1:0] bd_storage [0:(1<<ABITS)-1];
    assign r_data = bd_storage[r_addr];
    always @(posedge clk)
        if (w_en) bd_storage[w_addr] <= w_data;
endmodule
