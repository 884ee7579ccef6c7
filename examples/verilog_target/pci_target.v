// SPDX-License-Identifier: BSD-2-Clause
//
// A small 32-bit PCI target in plain Verilog, written from the PCI Local Bus
// Specification 3.0 (chapters 3 and 6) as an example of a core under test in slot 0 of
// pcispy's simulated system (docs/using-the-simulator.md walks through it).
//
// What it does:
// - a type 0 configuration header (function 0 only): IDs, Command (memory space; Parity
//   Error Response and SERR# Enable read 0, as a device that checks no parity keeps them),
//   Status (medium DEVSEL timing), class code, Cache Line Size, one 32-bit memory BAR of
//   WINDOW_BYTES, Interrupt Line;
// - medium decode: DEVSEL# in the third clock of a transaction (address phase = 1);
// - memory reads and writes (Memory Read, Read Line, Read Multiple, Write, Write and
//   Invalidate) into a RAM filling the BAR, single or burst, no wait states; a burst in
//   linear order that reaches the end of the window, and any other burst order, ends
//   with a disconnect with data (STOP# with TRDY#);
// - PAR on the clock after each AD value it drove.
// What it leaves out: parity checking (PERR#, SERR#), I/O space, interrupts, 64-bit.
//
// Every port is at pin level, as on the connector: the active-low lines (FRAME#,
// IRDY#, TRDY#, STOP#, DEVSEL#, RST#) read 0 while asserted. Each output has an output
// enable (1 = driving); TRDY#, STOP# and DEVSEL# share one, as they are driven together.

`include "pci_defs.vh"

module pci_target #(
    parameter [15:0] VENDOR_ID = 16'h1209,
    parameter [15:0] DEVICE_ID = 16'h0001,
    parameter WINDOW_BYTES = 1024            // a power of two, 16 or more
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire [31:0] ad_in,
    output reg  [31:0] ad_out,
    output reg         ad_oe,
    input  wire [3:0]  cbe_in,
    output reg         par_out,
    output reg         par_oe,
    input  wire        frame_in,
    input  wire        irdy_in,
    input  wire        idsel_in,
    output wire        trdy_out,
    output wire        stop_out,
    output wire        devsel_out,
    output reg         tsd_oe                 // TRDY#, STOP#, DEVSEL#
);
    localparam WORDS = WINDOW_BYTES / 4;
    localparam WORD_BITS = $clog2(WORDS);
    localparam BAR_LOW = $clog2(WINDOW_BYTES); // BAR bits below this read 0

    // Where a transaction is. DATA: data phases; STOPPING: STOP# held after a
    // disconnect until the master deasserts FRAME#; RELEASE: the clock of deasserted
    // TRDY#/STOP#/DEVSEL# before they float (sustained tri-state).
    localparam IDLE = 3'd0, DECODE = 3'd1, DATA = 3'd2, STOPPING = 3'd3, RELEASE = 3'd4;
    reg [2:0] state;

    // Inside this module the handshakes are active-high.
    wire frame = ~frame_in;
    wire irdy = ~irdy_in;
    reg trdy, stop, devsel;
    assign trdy_out = ~trdy;
    assign stop_out = ~stop;
    assign devsel_out = ~devsel;

    // FRAME# as sampled at the previous edge: an address phase is the first clock of
    // FRAME# asserted.
    reg frame_was;

    // The transaction, latched from its address phase.
    reg [31:0] address;
    reg [3:0]  command;
    reg        selected;         // IDSEL in the address phase
    reg        is_read;

    // Configuration registers that hold state.
    reg        mem_enable;       // Command bit 1
    reg [7:0]  cache_line_size;
    reg [31:BAR_LOW] bar0;
    reg [7:0]  interrupt_line;

    // The window's storage; named bd_* so that pcispy makes it public (a backdoor).
    reg [31:0] bd_mem [0:WORDS-1];

    wire config_cycle = command[3:1] == 3'b101 && selected && address[1:0] == 2'b00
                        && address[10:8] == 3'd0;
    wire memory_command = command == `CMD_MEM_READ || command == `CMD_MEM_WRITE
                          || command == `CMD_MEM_READ_MULTIPLE
                          || command == `CMD_MEM_READ_LINE
                          || command == `CMD_MEM_WRITE_INVAL;
    wire memory_cycle = memory_command && mem_enable && address[31:BAR_LOW] == bar0;
    wire [WORD_BITS-1:0] word = address[WORD_BITS+1:2];

    // The last data phase this target allows: a configuration access has one (bursts
    // of configuration cycles are not supported), a memory burst in a non-linear order
    // one too (AD[1:0] != 00), a linear burst ends with the window.
    function last_phase(input [31:0] at);
        last_phase = config_cycle || at[1:0] != 2'b00 || &at[WORD_BITS+1:2];
    endfunction

    function [31:0] config_word(input [5:0] register);
        case (register)
            `REG_ID:         config_word = {DEVICE_ID, VENDOR_ID};
            // Status: DEVSEL timing medium (bits 10:9 = 01); Command as written.
            `REG_STATUS_CMD: config_word = {16'h0200, 14'd0, mem_enable, 1'b0};
            // Class 0x05 (memory controller), 0x80 (other); revision 1.
            `REG_CLASS_REV:  config_word = {24'h058000, 8'h01};
            // Header type 0, Latency Timer hard-wired to 0 (not a master).
            `REG_MISC:       config_word = {16'd0, 8'd0, cache_line_size};
            // 32-bit, prefetchable (reads have no side effects) memory BAR.
            `REG_BAR0:       config_word = {bar0, {BAR_LOW-4{1'b0}}, 4'b1000};
            `REG_INTERRUPT:  config_word = {16'd0, 8'd0, interrupt_line};
            default:         config_word = 32'd0;
        endcase
    endfunction

    function [31:0] read_word(input [31:0] at);
        read_word = config_cycle ? config_word(at[7:2]) : bd_mem[at[WORD_BITS+1:2]];
    endfunction

    // C/BE#[3:0] in a data phase: 0 enables a byte lane.
    function [31:0] merge(input [31:0] old, input [31:0] data, input [3:0] cbe);
        merge = {cbe[3] ? old[31:24] : data[31:24], cbe[2] ? old[23:16] : data[23:16],
                 cbe[1] ? old[15:8] : data[15:8], cbe[0] ? old[7:0] : data[7:0]};
    endfunction

    task config_write(input [5:0] register, input [31:0] data, input [3:0] cbe);
        reg [31:0] bar_merged;
        begin
        bar_merged = merge({bar0, {BAR_LOW{1'b0}}}, data, cbe);
        case (register)
            `REG_STATUS_CMD: begin
                // Status bits are read-only or write-1-to-clear; none is ever set here.
                if (!cbe[0]) mem_enable <= data[1];
            end
            `REG_MISC: if (!cbe[0]) cache_line_size <= data[7:0];
            `REG_BAR0: bar0 <= bar_merged[31:BAR_LOW];
            `REG_INTERRUPT: if (!cbe[0]) interrupt_line <= data[7:0];
            default: ;
        endcase
        end
    endtask

    always @(posedge clk) begin
        if (!rst_n) begin
            state <= IDLE;
            frame_was <= 1'b0;
            {trdy, stop, devsel, tsd_oe, ad_oe, par_oe} <= 6'd0;
            ad_out <= 32'd0;
            par_out <= 1'b0;
            mem_enable <= 1'b0;
            cache_line_size <= 8'd0;
            bar0 <= 0;
            interrupt_line <= 8'd0;
        end else begin
            frame_was <= frame;
            // PAR covers the AD this target drove in the clock just ended with the C/BE#
            // of that clock, and is driven in the next clock.
            par_out <= ^{ad_out, cbe_in};
            par_oe <= ad_oe;
            case (state)
                IDLE:
                    if (frame && !frame_was) begin
                        address <= ad_in;
                        command <= cbe_in;
                        selected <= idsel_in;
                        is_read <= !cbe_in[0];     // every read command has bit 0 = 0
                        state <= DECODE;
                    end
                DECODE:
                    // Medium decode: the address was registered in the address phase,
                    // DEVSEL# goes out from this edge, in the third clock. A read's AD
                    // is free now: the second clock was its turnaround.
                    if (config_cycle || memory_cycle) begin
                        {devsel, trdy, tsd_oe} <= 3'b111;
                        stop <= last_phase(address);
                        if (is_read) begin
                            ad_out <= read_word(address);
                            ad_oe <= 1'b1;
                        end
                        state <= DATA;
                    end else begin
                        state <= IDLE;
                    end
                DATA:
                    if (irdy) begin                // a data phase completes (TRDY# is on)
                        if (!is_read) begin
                            if (config_cycle)
                                config_write(address[7:2], ad_in, cbe_in);
                            else
                                bd_mem[word] <= merge(bd_mem[word], ad_in, cbe_in);
                        end
                        if (!frame) begin          // the master's last data phase
                            {trdy, stop, devsel} <= 3'b000;
                            ad_oe <= 1'b0;
                            state <= RELEASE;
`ifdef FAULT_RELEASE_ASSERTED
                            // A deliberate fault for pcispy's own tests of its checks:
                            // TRDY#/STOP#/DEVSEL# let go while asserted, without their
                            // clock of deasserted drive.
                            tsd_oe <= 1'b0;
`endif
                        end else if (stop) begin   // disconnected with data
                            trdy <= 1'b0;
                            state <= STOPPING;
                        end else begin             // the burst goes on
                            address <= address + 32'd4;
                            stop <= last_phase(address + 32'd4);
                            if (is_read) ad_out <= read_word(address + 32'd4);
                        end
                    end
                STOPPING:
                    // STOP# and DEVSEL# stay until FRAME# is seen deasserted; then the
                    // master's final phase (IRDY# with STOP#) completes without data.
                    if (!frame) begin
                        {stop, devsel} <= 2'b00;
                        ad_oe <= 1'b0;
                        state <= RELEASE;
                    end
                RELEASE: begin
                    tsd_oe <= 1'b0;
                    state <= IDLE;
                end
                default:
                    state <= IDLE;
            endcase
        end
    end
endmodule
