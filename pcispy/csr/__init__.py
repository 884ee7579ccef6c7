# SPDX-License-Identifier: BSD-2-Clause
"""Registers: the idiom every register block is declared in and the gateware bank
made from a register map (:mod:`.bank`)."""
