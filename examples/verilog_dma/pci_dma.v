// SPDX-License-Identifier: BSD-2-Clause
//
// A 32-bit PCI device in plain Verilog, written from the PCI Local Bus Specification 3.0
// (chapters 3 and 6) as a core under test for pcispy's simulated system. It has the shape
// of many bridge cores (the OpenCores PCI bridge among them), which is what makes it a
// test: its first BAR is not memory.
//
// - BAR0, 4 KiB of registers: offsets 0x000-0x0FF show the configuration space (the
//   IDs read-only, the Command register writable as by a configuration write: a write
//   there can turn memory decoding off), 0x100-0x113 a DMA engine's registers, the rest
//   reads 0. Each access is one data phase (a burst is disconnected with its first word).
// - BAR1, RAM_BYTES of RAM (prefetchable): single and burst reads and writes, a
//   disconnect with data at the end of the window or for a non-linear burst order.
// - A type 0 configuration header for function 0 (AD[10:8] decoded): Command (memory
//   space, bus master, Parity Error Response, SERR# Enable), Status (medium DEVSEL
//   timing, the error bits, write 1 to clear), Cache Line Size, Latency Timer.
// - Parity: PAR on the clock after every AD it drives. Address parity is checked on every
//   address phase: an error sets Detected Parity Error, with Parity Error Response and
//   SERR# Enable asserts SERR# for one clock two clocks after the address phase, and with
//   Parity Error Response the transaction is not claimed. Data parity is checked on the
//   writes it takes and the reads it masters: an error sets Detected Parity Error, with
//   Parity Error Response PERR# two clocks after the data phase (and Master Data Parity
//   Error for its own reads, or when it sees PERR# for its own writes).
// - The DMA master: moves DMA_LEN bytes between the RAM (from DMA_RAM) and the bus
//   address DMA_ADDR, in bursts of up to 16 data phases (Memory Write, Memory Read
//   Multiple), no master wait states. It arbitrates with REQ#/GNT#, parks the bus when
//   granted and idle, continues after retries and disconnects (REQ# released two clocks
//   after a transaction the target stopped), ends a burst when its Latency Timer has
//   expired and GNT# is gone, and stops on a master or target abort.
//
// DMA registers (BAR0):
//   0x100 DMA_ADDR    bus address (DWORD aligned)
//   0x104 DMA_LEN     bytes to move (DWORDs; at most the RAM)
//   0x108 DMA_RAM     RAM byte offset to start at
//   0x10C DMA_CTRL    write: bit 0 start, bit 1 direction (1: RAM to bus, 0: bus to
//                     RAM); read: bit 0 busy, bit 1 direction
//   0x110 DMA_STATUS  bit 0 done, 1 master abort, 2 target abort, 3 data parity error,
//                     4 refused (bus mastering off or length 0); write 1 to clear
//
// Every port is at pin level: active-low lines read 0 while asserted. Each output has an
// output enable (1 = driving); TRDY#, STOP# and DEVSEL# share one. SERR# is open drain:
// serr_oe is 1 only in the clock it is asserted.

`include "pci_dma_defs.vh"

module pci_dma #(
    parameter [15:0] VENDOR_ID = 16'h5C15,
    parameter [15:0] DEVICE_ID = 16'h0003,
    parameter RAM_BYTES = 1024               // a power of two, 64 or more
) (
    input  wire        clk,
    input  wire        rst_n,
    input  wire [31:0] ad_in,
    output wire [31:0] ad_out,
    output wire        ad_oe,
    input  wire [3:0]  cbe_in,
    output reg  [3:0]  cbe_out,
    output reg         cbe_oe,
    input  wire        par_in,
    output reg         par_out,
    output reg         par_oe,
    input  wire        frame_in,
    output wire        frame_out,
    output reg         frame_oe,
    input  wire        irdy_in,
    output wire        irdy_out,
    output reg         irdy_oe,
    input  wire        trdy_in,
    output wire        trdy_out,
    input  wire        stop_in,
    output wire        stop_out,
    input  wire        devsel_in,
    output wire        devsel_out,
    output reg         tsd_oe,               // TRDY#, STOP#, DEVSEL#
    input  wire        idsel_in,
    input  wire        perr_in,
    output wire        perr_out,
    output wire        perr_oe,
    output wire        serr_out,
    output wire        serr_oe,
    output wire        req_out,
    input  wire        gnt_in
);
    localparam WORDS = RAM_BYTES / 4;
    localparam WORD_BITS = $clog2(WORDS);
    localparam RAM_LOW = $clog2(RAM_BYTES);   // BAR1 bits below this read 0
    localparam REG_LOW = 12;                  // BAR0: 4 KiB
    localparam BURST = 16;                    // data phases of a DMA burst, at most
    localparam [WORD_BITS:0] ALL_WORDS = WORDS[WORD_BITS:0];

    // The bus as sampled in this clock, active-high.
    wire frame = ~frame_in;
    wire irdy = ~irdy_in;
    wire trdy_bus = ~trdy_in;
    wire stop_bus = ~stop_in;
    wire devsel_bus = ~devsel_in;
    wire perr_bus = ~perr_in;
    wire gnt = ~gnt_in;
    reg frame_was;                            // FRAME# in the previous clock

    // ---- configuration registers ----------------------------------------------------
    reg        mem_enable, master_enable, perr_enable, serr_enable;   // Command 1, 2, 6, 8
    reg        st_master_parity, st_rx_target_abort, st_rx_master_abort;  // Status 8, 12, 13
    reg        st_signaled_serr, st_detected_parity;                      // Status 14, 15
    reg [7:0]  cache_line_size, latency_timer, interrupt_line;
    reg [31:REG_LOW] bar0;
    reg [31:RAM_LOW] bar1;

    // ---- DMA registers ----------------------------------------------------------------
    reg [31:2] dma_addr;
    reg [WORD_BITS:0] dma_words;              // DWORDs left to move
    reg [WORD_BITS-1:0] dma_ram;              // RAM word of the next one
    reg        dma_busy, dma_to_bus;
    reg [4:0]  dma_status;

    // The RAM; named bd_* so that pcispy makes it public (a backdoor).
    reg [31:0] bd_ram [0:WORDS-1];

    // C/BE# in a data phase: 0 enables a byte lane.
    function [31:0] merge(input [31:0] old, input [31:0] data, input [3:0] cbe);
        merge = {cbe[3] ? old[31:24] : data[31:24], cbe[2] ? old[23:16] : data[23:16],
                 cbe[1] ? old[15:8] : data[15:8], cbe[0] ? old[7:0] : data[7:0]};
    endfunction

    function [31:0] config_word(input [5:0] register);
        case (register)
            `REG_ID:         config_word = {DEVICE_ID, VENDOR_ID};
            // Status: DEVSEL timing medium (01); Command as written.
            `REG_STATUS_CMD: config_word = {st_detected_parity, st_signaled_serr,
                                            st_rx_master_abort, st_rx_target_abort, 1'b0,
                                            2'b01, st_master_parity, 15'd0, serr_enable,
                                            1'b0, perr_enable, 3'd0, master_enable,
                                            mem_enable, 1'b0};
            // Class 0x06 (bridge), 0x80 (other); revision 1.
            `REG_CLASS_REV:  config_word = {24'h068000, 8'h01};
            // Header type 0 (single function).
            `REG_MISC:       config_word = {16'd0, latency_timer, cache_line_size};
            `REG_BAR0:       config_word = {bar0, {REG_LOW{1'b0}}};
            // Prefetchable: the RAM's reads have no side effects.
            `REG_BAR1:       config_word = {bar1, {RAM_LOW-4{1'b0}}, 4'b1000};
            `REG_INTERRUPT:  config_word = {16'd0, 8'd0, interrupt_line};
            default:         config_word = 32'd0;
        endcase
    endfunction

    // A configuration write (or a write into BAR0's view of the configuration space).
    task config_write(input [5:0] register, input [31:0] data, input [3:0] cbe);
        reg [31:0] merged;
        begin
        case (register)
            `REG_STATUS_CMD: begin
                if (!cbe[0]) begin
                    mem_enable <= data[1];
                    master_enable <= data[2];
                    perr_enable <= data[6];
                end
                if (!cbe[1]) serr_enable <= data[8];
                if (!cbe[3]) begin     // Status: write 1 to clear
                    if (data[24]) st_master_parity <= 1'b0;
                    if (data[28]) st_rx_target_abort <= 1'b0;
                    if (data[29]) st_rx_master_abort <= 1'b0;
                    if (data[30]) st_signaled_serr <= 1'b0;
                    if (data[31]) st_detected_parity <= 1'b0;
                end
            end
            `REG_MISC: begin
                if (!cbe[0]) cache_line_size <= data[7:0];
                if (!cbe[1]) latency_timer <= data[15:8];
            end
            `REG_BAR0: begin
                merged = merge({bar0, {REG_LOW{1'b0}}}, data, cbe);
                bar0 <= merged[31:REG_LOW];
            end
            `REG_BAR1: begin
                merged = merge({bar1, {RAM_LOW{1'b0}}}, data, cbe);
                bar1 <= merged[31:RAM_LOW];
            end
            `REG_INTERRUPT: if (!cbe[0]) interrupt_line <= data[7:0];
            default: ;
        endcase
        end
    endtask

    // ---- the target -------------------------------------------------------------------
    localparam T_IDLE = 3'd0, T_DECODE = 3'd1, T_DATA = 3'd2, T_STOPPING = 3'd3,
               T_RELEASE = 3'd4;
    reg [2:0]  t_state;
    reg [31:0] t_address;
    reg [3:0]  t_command;
    reg        t_selected;                    // IDSEL in the address phase
    reg        t_read;
    reg [1:0]  t_space;                       // what the transaction addresses
    localparam SPACE_CONFIG = 2'd0, SPACE_REGS = 2'd1, SPACE_RAM = 2'd2;
    reg        t_trdy, t_stop, t_devsel;
    reg [31:0] t_ad;
    reg        t_ad_oe;
    reg        addr_par;                      // parity of the last address phase
    assign trdy_out = ~t_trdy;
    assign stop_out = ~t_stop;
    assign devsel_out = ~t_devsel;

    wire memory_command = t_command == `CMD_MEM_READ || t_command == `CMD_MEM_WRITE
                          || t_command == `CMD_MEM_READ_MULTIPLE
                          || t_command == `CMD_MEM_READ_LINE
                          || t_command == `CMD_MEM_WRITE_INVAL;
    wire config_hit = t_command[3:1] == 3'b101 && t_selected && t_address[1:0] == 2'b00
                      && t_address[10:8] == 3'd0;
    wire regs_hit = memory_command && mem_enable && t_address[31:REG_LOW] == bar0;
    wire ram_hit = memory_command && mem_enable && t_address[31:RAM_LOW] == bar1;
    wire [WORD_BITS-1:0] t_word = t_address[WORD_BITS+1:2];
    wire [11:0] t_offset = t_address[11:0];

    function [31:0] register_word(input [11:0] offset);
        if (offset < 12'h100)
            register_word = config_word(offset[7:2]);
        else case (offset)
            `DMA_ADDR:   register_word = {dma_addr, 2'b00};
            `DMA_LEN:    register_word = {{(29-WORD_BITS){1'b0}}, dma_words, 2'b00};
            `DMA_RAM:    register_word = {{(30-WORD_BITS){1'b0}}, dma_ram, 2'b00};
            `DMA_CTRL:   register_word = {30'd0, dma_to_bus, dma_busy};
            `DMA_STATUS: register_word = {27'd0, dma_status};
            default:     register_word = 32'd0;
        endcase
    endfunction

    function [31:0] target_word(input [1:0] space, input [31:0] at);
        case (space)
            SPACE_CONFIG: target_word = config_word(at[7:2]);
            SPACE_REGS:   target_word = register_word(at[11:0]);
            default:      target_word = bd_ram[at[WORD_BITS+1:2]];
        endcase
    endfunction

    // The last data phase this target allows: configuration and register accesses have
    // one, a RAM burst in a non-linear order one too, a linear one ends with the RAM.
    function last_phase(input [1:0] space, input [31:0] at);
        last_phase = space != SPACE_RAM || at[1:0] != 2'b00 || &at[WORD_BITS+1:2];
    endfunction

    // Write data parity (what this target took): checked the clock after the data phase.
    reg        wpar_check, wpar_expect;
    // The DMA registers written through BAR0 (applied by the master's block below).
    reg        dma_write;
    reg [11:0] dma_write_offset;
    reg [31:0] dma_write_data;

    // ---- the master -------------------------------------------------------------------
    localparam M_IDLE = 3'd0, M_REQ = 3'd1, M_ADDR = 3'd2, M_DATA = 3'd3, M_FINAL = 3'd4,
               M_END = 3'd5, M_BACKOFF = 3'd6;
    reg [2:0]  m_state;
    reg        m_frame, m_irdy, m_req, m_ad_oe;
    reg [31:0] m_ad;
    reg [4:0]  m_left;                        // data phases left in this burst
    reg [3:0]  m_clock;                       // clock of the transaction (address = 1)
    reg [7:0]  m_lt;                          // clocks since the address phase
    reg        m_claimed, m_final_abort;
    reg [1:0]  m_abort_seen;                  // pulse: target (01) or master (10) abort
    // The master's read data goes into the RAM through the target's block (one writer).
    reg        m_ram_we;
    reg [WORD_BITS-1:0] m_ram_word;
    reg [31:0] m_ram_data;
    reg        dma_parity;                    // pulse: a data parity error of the DMA
    reg        rpar_check, rpar_expect;       // read data parity, as for writes
    reg [1:0]  m_watch;                       // clocks left to see PERR# for our writes
    assign frame_out = ~m_frame;
    assign irdy_out = ~m_irdy;
    assign req_out = ~m_req;
    assign ad_out = m_ad_oe ? m_ad : t_ad;
    assign ad_oe = m_ad_oe | t_ad_oe;
    wire [4:0] burst_words = dma_words > BURST ? BURST : dma_words[4:0];
    wire lt_expired = m_lt >= latency_timer;

    // ---- PERR# and SERR# --------------------------------------------------------------
    reg [1:0] perr_step;                      // 1: asserted, 2: driven deasserted
    reg       serr_now;
    assign perr_out = perr_step != 2'd1;
    assign perr_oe = perr_step != 2'd0;
    assign serr_out = 1'b0;
    assign serr_oe = serr_now;

    wire data_error = (wpar_check && par_in != wpar_expect)
                      || (rpar_check && par_in != rpar_expect);

    always @(posedge clk) begin
        if (!rst_n) begin
            frame_was <= 1'b0;
            {mem_enable, master_enable, perr_enable, serr_enable} <= 4'd0;
            {st_master_parity, st_rx_target_abort, st_rx_master_abort} <= 3'd0;
            {st_signaled_serr, st_detected_parity} <= 2'd0;
            cache_line_size <= 8'd0;
            latency_timer <= 8'd0;
            interrupt_line <= 8'd0;
            bar0 <= 0;
            bar1 <= 0;
            t_state <= T_IDLE;
            {t_trdy, t_stop, t_devsel, tsd_oe, t_ad_oe} <= 5'd0;
            t_ad <= 32'd0;
            {wpar_check, rpar_check, dma_write, dma_parity} <= 4'd0;
            {par_out, par_oe} <= 2'd0;
            perr_step <= 2'd0;
            serr_now <= 1'b0;
        end else begin
            frame_was <= frame;
            // PAR covers the AD driven in the clock just ended with that clock's C/BE#.
            par_out <= ^{ad_out, cbe_in};
            par_oe <= ad_oe;
            serr_now <= 1'b0;
            dma_write <= 1'b0;
            // PERR#: asserted for one clock, driven deasserted for one, released.
            perr_step <= perr_step == 2'd1 ? 2'd2 : 2'd0;
            wpar_check <= 1'b0;
            rpar_check <= 1'b0;
            dma_parity <= 1'b0;
            if (data_error) begin
                st_detected_parity <= 1'b1;
                if (perr_enable) perr_step <= 2'd1;
                if (perr_enable && rpar_check) st_master_parity <= 1'b1;
                if (rpar_check) dma_parity <= 1'b1;
            end
            // Our own writes: a target reports their data errors on PERR#.
            if (m_watch != 2'd0 && perr_bus) begin
                dma_parity <= 1'b1;
                if (perr_enable) st_master_parity <= 1'b1;
            end
            if (m_ram_we) bd_ram[m_ram_word] <= m_ram_data;
            if (m_abort_seen[0]) st_rx_target_abort <= 1'b1;
            if (m_abort_seen[1]) st_rx_master_abort <= 1'b1;
            case (t_state)
                T_IDLE:
                    if (frame && !frame_was) begin
                        t_address <= ad_in;
                        t_command <= cbe_in;
                        t_selected <= idsel_in;
                        t_read <= !cbe_in[0];
                        addr_par <= ^{ad_in, cbe_in};
                        t_state <= T_DECODE;
                    end
                T_DECODE: begin
                    // PAR of the address phase is on the bus now: every device checks it.
                    if (par_in != addr_par) begin
                        st_detected_parity <= 1'b1;
                        if (perr_enable && serr_enable) begin
                            serr_now <= 1'b1;
                            st_signaled_serr <= 1'b1;
                        end
                    end
                    // Medium decode: DEVSEL# from this edge (clock 3). A corrupted address
                    // is not claimed when Parity Error Response is set.
                    if ((config_hit || regs_hit || ram_hit)
                            && !(par_in != addr_par && perr_enable)) begin
                        {t_devsel, t_trdy, tsd_oe} <= 3'b111;
                        t_space <= config_hit ? SPACE_CONFIG : regs_hit ? SPACE_REGS
                                   : SPACE_RAM;
                        t_stop <= last_phase(config_hit ? SPACE_CONFIG : regs_hit
                                             ? SPACE_REGS : SPACE_RAM, t_address);
                        if (t_read) begin
                            t_ad <= target_word(config_hit ? SPACE_CONFIG : regs_hit
                                                ? SPACE_REGS : SPACE_RAM, t_address);
                            t_ad_oe <= 1'b1;
                        end
                        t_state <= T_DATA;
                    end else begin
                        t_state <= T_IDLE;
                    end
                end
                T_DATA:
                    if (irdy) begin                // a data phase completes (TRDY# is on)
                        if (!t_read) begin
                            wpar_check <= 1'b1;
                            wpar_expect <= ^{ad_in, cbe_in};
                            case (t_space)
                                SPACE_CONFIG: config_write(t_address[7:2], ad_in, cbe_in);
                                SPACE_REGS:
                                    if (t_offset < 12'h100)
                                        config_write(t_offset[7:2], ad_in, cbe_in);
                                    else begin
                                        dma_write <= 1'b1;
                                        dma_write_offset <= t_offset;
                                        dma_write_data <= ad_in;
                                    end
                                default: bd_ram[t_word] <= merge(bd_ram[t_word], ad_in, cbe_in);
                            endcase
                        end
                        if (!frame) begin          // the master's last data phase
                            {t_trdy, t_stop, t_devsel, t_ad_oe} <= 4'd0;
                            t_state <= T_RELEASE;
                        end else if (t_stop) begin // disconnected with data
                            t_trdy <= 1'b0;
                            t_state <= T_STOPPING;
                        end else begin             // the burst goes on
                            t_address <= t_address + 32'd4;
                            t_stop <= last_phase(t_space, t_address + 32'd4);
                            if (t_read) t_ad <= target_word(t_space, t_address + 32'd4);
                        end
                    end
                T_STOPPING:
                    // STOP# and DEVSEL# stay until FRAME# is seen deasserted.
                    if (!frame) begin
                        {t_stop, t_devsel, t_ad_oe} <= 3'd0;
                        t_state <= T_RELEASE;
                    end
                T_RELEASE: begin
                    tsd_oe <= 1'b0;
                    t_state <= T_IDLE;
                end
                default:
                    t_state <= T_IDLE;
            endcase
            // The master's read data, checked like write data.
            if (m_state == M_DATA || m_state == M_FINAL)
                if (irdy && trdy_bus && !dma_to_bus) begin
                    rpar_check <= 1'b1;
                    rpar_expect <= ^{ad_in, cbe_in};
                end
        end
    end

    // The master and the DMA registers.
    wire moved = m_state == M_DATA && irdy && trdy_bus;        // a word moves now
    wire [WORD_BITS:0] words_after = dma_words - {{WORD_BITS{1'b0}}, moved};
    wire starting = gnt && !frame && !irdy;                     // GNT# on an idle bus

    // The clock after the last data phase: IRDY# driven deasserted, FRAME#, AD and C/BE#
    // released; REQ# off for that clock and the next (required after a retry); the DMA
    // ends with the transfer or an abort.
    task finish(input aborted);
        begin
        m_irdy <= 1'b0;
        frame_oe <= 1'b0;
        m_ad_oe <= 1'b0;
        cbe_oe <= 1'b0;
        cbe_out <= 4'hF;
        m_req <= 1'b0;
        if (aborted) begin
            dma_busy <= 1'b0;
            dma_status <= dma_status | (m_claimed ? 5'b00101 : 5'b00011);
            m_abort_seen <= m_claimed ? 2'b01 : 2'b10;
        end else if (words_after == 0) begin
            dma_busy <= 1'b0;
            dma_status <= dma_status | 5'b00001;
        end
        m_state <= M_END;
        end
    endtask

    always @(posedge clk) begin
        if (!rst_n) begin
            m_state <= M_IDLE;
            {m_frame, m_irdy, m_req, m_ad_oe} <= 4'd0;
            {frame_oe, irdy_oe, cbe_oe} <= 3'd0;
            m_ad <= 32'd0;
            cbe_out <= 4'hF;
            dma_addr <= 30'd0;
            dma_words <= 0;
            dma_ram <= 0;
            {dma_busy, dma_to_bus} <= 2'd0;
            dma_status <= 5'd0;
            m_watch <= 2'd0;
            m_ram_we <= 1'b0;
            m_abort_seen <= 2'd0;
        end else begin
            m_ram_we <= 1'b0;
            m_abort_seen <= 2'd0;
            if (m_watch != 2'd0) m_watch <= m_watch - 2'd1;
            if (dma_parity) dma_status <= dma_status | 5'b01000;
            if (dma_write) case (dma_write_offset)
                `DMA_ADDR: dma_addr <= dma_write_data[31:2];
                `DMA_LEN:  dma_words <= dma_write_data[31:2] > WORDS ? ALL_WORDS
                                        : dma_write_data[WORD_BITS+2:2];
                `DMA_RAM:  dma_ram <= dma_write_data[WORD_BITS+1:2];
                `DMA_CTRL:
                    if (dma_write_data[0] && !dma_busy) begin
                        dma_to_bus <= dma_write_data[1];
                        if (!master_enable || dma_words == 0)
                            dma_status <= dma_status | 5'b10001;
                        else
                            dma_busy <= 1'b1;
                    end
                `DMA_STATUS: dma_status <= dma_status & ~dma_write_data[4:0];
                default: ;
            endcase
            if (m_lt != 8'hFF) m_lt <= m_lt + 8'd1;
            if (m_clock != 4'hF) m_clock <= m_clock + 4'd1;
            case (m_state)
                M_IDLE: begin
                    m_req <= dma_busy;
                    if (dma_busy) m_state <= M_REQ;
                end
                M_REQ:
                    // GNT# and an idle bus sampled in the same clock: the next clock is
                    // the address phase.
                    if (starting) begin
                        m_frame <= 1'b1;
                        frame_oe <= 1'b1;
                        m_ad <= {dma_addr, 2'b00};
                        m_ad_oe <= 1'b1;
                        cbe_out <= dma_to_bus ? `CMD_MEM_WRITE : `CMD_MEM_READ_MULTIPLE;
                        cbe_oe <= 1'b1;
                        m_left <= burst_words;
                        m_clock <= 4'd1;
                        m_lt <= 8'd0;
                        m_claimed <= 1'b0;
                        m_state <= M_ADDR;
                    end
                M_ADDR: begin
                    // IRDY# from the clock after the address phase; FRAME# off if that
                    // is the only data phase. A read turns AD around.
                    m_irdy <= 1'b1;
                    irdy_oe <= 1'b1;
                    m_frame <= m_left > 5'd1;
                    cbe_out <= 4'h0;
                    if (dma_to_bus) m_ad <= bd_ram[dma_ram];
                    else m_ad_oe <= 1'b0;
                    m_state <= M_DATA;
                end
                M_DATA: begin
                    if (devsel_bus) m_claimed <= 1'b1;
                    if (moved) begin
                        if (dma_to_bus) begin
                            m_ad <= bd_ram[dma_ram + 1'b1];
                            m_watch <= 2'd3;
                        end else begin
                            m_ram_we <= 1'b1;
                            m_ram_word <= dma_ram;
                            m_ram_data <= ad_in;
                        end
                        dma_addr <= dma_addr + 30'd1;
                        dma_ram <= dma_ram + 1'b1;
                        dma_words <= words_after;
                        m_left <= m_left - 5'd1;
                    end
                    if (irdy && stop_bus) begin
                        // Retry, disconnect or target abort (STOP# without DEVSEL#): FRAME#
                        // goes at once, the final phase completes with STOP#.
                        m_claimed <= m_claimed || devsel_bus;
                        if (m_frame) begin
                            m_frame <= 1'b0;
                            m_state <= M_FINAL;
                            m_final_abort <= !devsel_bus;
                        end else
                            finish(!devsel_bus);
                    end else if (moved) begin
                        if (!m_frame)
                            finish(1'b0);
                        // The next phase is the last: the burst's end, or the Latency
                        // Timer expired with GNT# gone.
                        else if (m_left == 5'd2 || (lt_expired && !gnt))
                            m_frame <= 1'b0;
                    end else if (!devsel_bus && !m_claimed && m_clock == 4'd5) begin
                        // Nobody claimed by clock 5: master abort.
                        if (m_frame) begin
                            m_frame <= 1'b0;
                            m_state <= M_FINAL;
                            m_final_abort <= 1'b1;
                        end else
                            finish(1'b1);
                    end
                end
                M_FINAL:
                    // FRAME# deasserted, IRDY# asserted: the final phase, which completes
                    // with STOP# (or, after a master abort, at once).
                    finish(m_final_abort);
                M_END: begin
                    irdy_oe <= 1'b0;
                    m_state <= M_BACKOFF;
                end
                M_BACKOFF: begin
                    m_req <= dma_busy;
                    m_state <= dma_busy ? M_REQ : M_IDLE;
                end
                default:
                    m_state <= M_IDLE;
            endcase
            // Bus parking: granted on an idle bus with nothing to start, AD and C/BE# are
            // driven from the next clock (PAR follows a clock later), and let go the
            // clock after GNT# is seen gone.
            if (m_state == M_IDLE || (m_state == M_REQ && !starting)) begin
                m_ad_oe <= starting;
                cbe_oe <= starting;
                m_ad <= 32'd0;
                cbe_out <= starting ? 4'h0 : 4'hF;
            end
        end
    end
endmodule
