// SPDX-License-Identifier: BSD-2-Clause
// The RAM of pcispy/core/ram.py: one write port with LANES write-enable lanes, one read
// port, synchronous (registered) or, with ASYNC_READ = 1, asynchronous. Hand-written
// because Amaranth emits one initialiser line per word, which makes megabyte memories slow
// to build in Verilator. `bd_storage` is the backdoor the simulated system's Python reads
// and writes.
module pcispy_ram #(
    parameter WIDTH = 32,
    parameter ABITS = 10,
    parameter LANES = 4,
    parameter ASYNC_READ = 0
) (
    input  wire                 clk,
    input  wire [ABITS-1:0]     w_addr,
    input  wire [WIDTH-1:0]     w_data,
    input  wire [LANES-1:0]     w_en,
    input  wire [ABITS-1:0]     r_addr,
    output wire [WIDTH-1:0]     r_data
);
    localparam LANE = WIDTH / LANES;
    reg [WIDTH-1:0] bd_storage [0:(1<<ABITS)-1];
    reg [WIDTH-1:0] r_data_q;
    assign r_data = ASYNC_READ ? bd_storage[r_addr] : r_data_q;
    integer lane;
    always @(posedge clk) begin
        for (lane = 0; lane < LANES; lane = lane + 1)
            if (w_en[lane]) bd_storage[w_addr][lane*LANE +: LANE] <= w_data[lane*LANE +: LANE];
        r_data_q <= bd_storage[r_addr];
    end
endmodule
