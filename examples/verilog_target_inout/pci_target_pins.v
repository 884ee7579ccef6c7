// SPDX-License-Identifier: BSD-2-Clause
//
// The example target (../verilog_target/pci_target.v) as a chip would show it: every
// PCI line it uses is one pin, an `inout` port with a tri-state driver, as many cores
// have their AD, C/BE#, PAR, FRAME#... ports. It shows a core with inout ports in
// slot 0 of pcispy's simulated system: core.json maps each line to its inout port
// ("io") and names the signal inside this module that enables its driver ("oe").

module pci_target_pins #(
    parameter [15:0] VENDOR_ID = 16'h1209,
    parameter [15:0] DEVICE_ID = 16'h0001,
    parameter WINDOW_BYTES = 1024
) (
    input  wire        clk,
    input  wire        rst_n,
    inout  wire [31:0] AD,
    inout  wire [3:0]  CBE,       // read only: a target never drives C/BE#
    inout  wire        PAR,
    inout  wire        FRAMEn,    // read only
    inout  wire        IRDYn,     // read only
    input  wire        IDSEL,
    inout  wire        TRDYn,
    inout  wire        STOPn,
    inout  wire        DEVSELn
);
    wire [31:0] ad_out;
    wire ad_oe, par_out, par_oe, trdy_out, stop_out, devsel_out, tsd_oe;

    pci_target #(
        .VENDOR_ID(VENDOR_ID), .DEVICE_ID(DEVICE_ID), .WINDOW_BYTES(WINDOW_BYTES)
    ) target (
        .clk(clk), .rst_n(rst_n),
        .ad_in(AD), .ad_out(ad_out), .ad_oe(ad_oe),
        .cbe_in(CBE),
        .par_out(par_out), .par_oe(par_oe),
        .frame_in(FRAMEn), .irdy_in(IRDYn), .idsel_in(IDSEL),
        .trdy_out(trdy_out), .stop_out(stop_out), .devsel_out(devsel_out),
        .tsd_oe(tsd_oe)
    );

    // The pins: driven while enabled, floating (z) otherwise.
    assign AD = ad_oe ? ad_out : 32'bz;
    assign PAR = par_oe ? par_out : 1'bz;
    assign TRDYn = tsd_oe ? trdy_out : 1'bz;
    assign STOPn = tsd_oe ? stop_out : 1'bz;
    assign DEVSELn = tsd_oe ? devsel_out : 1'bz;
endmodule
