// SPDX-License-Identifier: BSD-2-Clause
// PCI command codes (C/BE#[3:0] in the address phase, pin level), configuration register
// numbers (AD[7:2]) and DMA register offsets (BAR0) of pci_dma.v. PCI Local Bus
// Specification 3.0, section 3.1.1 (commands) and 6.1 (the type 0 header).
`define CMD_MEM_READ          4'b0110
`define CMD_MEM_WRITE         4'b0111
`define CMD_CONFIG_READ       4'b1010
`define CMD_CONFIG_WRITE      4'b1011
`define CMD_MEM_READ_MULTIPLE 4'b1100
`define CMD_MEM_READ_LINE     4'b1110
`define CMD_MEM_WRITE_INVAL   4'b1111

`define REG_ID         6'h00
`define REG_STATUS_CMD 6'h01
`define REG_CLASS_REV  6'h02
`define REG_MISC       6'h03
`define REG_BAR0       6'h04
`define REG_BAR1       6'h05
`define REG_INTERRUPT  6'h0F

`define DMA_ADDR   12'h100
`define DMA_LEN    12'h104
`define DMA_RAM    12'h108
`define DMA_CTRL   12'h10C
`define DMA_STATUS 12'h110
