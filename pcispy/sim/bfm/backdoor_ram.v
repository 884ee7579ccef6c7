// SPDX-License-Identifier: BSD-2-Clause
// A simulation-only RAM whose storage Python reads and writes directly (the backdoor).
// Hand-written because Amaranth emits one initialiser line per word, which makes
// megabyte memories slow to build. One write port with byte lanes, one read port with
// a registered (synchronous) read. `bd_storage` is made public to cocotb by the build.
module pcispy_backdoor_ram #(
    parameter WIDTH = 32,
    parameter ABITS = 10
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
