# tensorlsu. `make sim` runs the main job, `make test` the tests; both set up .venv first
# (ci.lock's exact versions). `make help` lists every target with what it does.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TRACE  ?= data/h200_sm90.jsonl

SIM    ?= verilator
POLICY ?= h200
N      ?= 100000
SEED   ?= 1
WAVES  ?=
# test workers (pytest-xdist): the CI machine has 2 cores
JOBS   ?= 2
# what a target says before it runs
SAY     = @printf '\n== make %s: %s\n' $@

.PHONY: all help venv lock opensta debs sim test test-long typecheck fuzz replay regress gemm verilog capture \
	synth formal bench clean

all: test

## help: list the targets and what each does
help:
	@sed -n 's/^## \([a-z-]*\): /\1\t/p' $(MAKEFILE_LIST) | awk -F"\t" '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml ci.lock
	@printf '\n== make venv: %s\n' "set up .venv: the package and every extra, at ci.lock's versions (about 1 GB, 2 minutes)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c ci.lock -e '.[dev]'
	touch $(STAMP)

## venv: set up .venv (make sim and make test do it when needed)
venv: $(STAMP)

## lock: write ci.lock anew from the newest versions pyproject.toml's ranges allow (then run make test)
lock:
	$(SAY) "resolve .[dev] in a scratch venv and write ci.lock"
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install -q --upgrade pip
	build/lock-venv/bin/python -m pip install -q -e '.[dev]'
	{ sed -n '1,/^# Regenerate/p' ci.lock; build/lock-venv/bin/python -m pip freeze --exclude-editable \
		| grep -v '^tensorlsu'; } > ci.lock.new && mv ci.lock.new ci.lock
	rm -rf build/lock-venv

# OpenSTA, the static timing of the ASIC flow (synth/asic.py), is a Debian package
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
## opensta: install OpenSTA from Debian when it is missing (the ASAP7 flow's timing)
opensta:
	@command -v sta >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq opensta; }

# What the tests need beyond OpenSTA: LZ4's header (Verilator's FST writer compiles against it),
# and GTKWave with a virtual display (the test that GTKWave decodes the save file's fields)
DEBS := liblz4-dev gtkwave xvfb xauth
## debs: install OpenSTA, LZ4's header, GTKWave and Xvfb from Debian when missing (make test needs them)
debs: opensta
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok' \
		|| echo $$p; done); [ -z "$$missing" ] || { $(SUDO) apt-get update -qq \
		&& $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; }

# Main job: the RTL regression, then the H200 vectors, the sm_100 Tensor Memory records and the
# tcgen05.cp records through the RTL, and the H200 vectors and the copy records through the model.
# Every RTL step runs under the project's cocotb testbench, on one build of the unit (SIM_UNIT:
# the shipped traces' largest shared memory, sm100_cp's 35,840 bytes, and their Tensor Memory
# allocation of 64 columns; tb/system/test_make_sim.py keeps it so), compiled optimized once,
# each trace over JOBS simulations at once. SIM=icarus: the same on Icarus (10 to 20 minutes).
# WAVES=1 writes waveforms (FST, payload fields named) and a GTKWave save file into build/.
SIM_UNIT := --tmem-columns 64 --smem-bytes 35840
SIM_RTL   = --backend rtl --sim $(SIM) --engine cocotb --policy $(POLICY) $(SIM_UNIT) --optimize --jobs $(JOBS)
## sim: the main job, the RTL regression and every shipped trace through the RTL and the model (about 4 min)
sim: $(STAMP)
	$(SAY) "the RTL under cocotb ($(SIM)), one build: a random regression, then every shipped trace; then the model"
	$(PY) tb/regress.py --n 300 --sim $(SIM) --engine cocotb --policy $(POLICY) --ports $(SIM_UNIT) \
		$(if $(WAVES),--waves)
	$(PY) -m tensorlsu.cosim replay $(TRACE) $(SIM_RTL) $(if $(WAVES),--waves)
	$(PY) -m tensorlsu.cosim replay data/h200_capture.jsonl $(SIM_RTL)
	$(PY) -m tensorlsu.cosim replay data/sm100_tmem.jsonl $(SIM_RTL)
	$(PY) -m tensorlsu.cosim replay data/sm100_cp.jsonl $(SIM_RTL)
	$(PY) -m tensorlsu.cosim replay $(TRACE)
	$(PY) -m tensorlsu.cosim replay data/sm100_cp.jsonl

## replay: the H200 vectors through the model (a second)
replay: $(STAMP)
	$(SAY) "$(TRACE) through the model"
	$(PY) -m tensorlsu.cosim replay $(TRACE)

# Long regression (not in CI): make regress N=1000000. Every port (global and generic wmma.load,
# the four quadrants, tcgen05.cp), a level of idle and back-pressure per job, h200 and packed
# shards in turn (POLICY=h200 or packed for one), on the native harness (SIM=verilator). Sharded
# by pytest-xdist over JOBS local workers, or over HOSTS (xdist --tx specs, each host a clone of
# the same commit: docs/regress.md; the controller then runs from build/farm, so that each host
# reads the tests from its own clone); each shard's seed is drawn from SEED, and a failure names
# the command that runs its shard alone (SHARDS=... SHARD=...). PORTS=0: the shared path only.
# The merged summary and coverage go to build/regress/.
SHARDS ?=
SHARD  ?=
HOSTS  ?=
PORTS  ?= 1
## regress: the long random regression on every port, sharded over JOBS workers or HOSTS (N instructions; not in CI)
regress: $(STAMP)
	$(SAY) "$(N) random instructions through the RTL, in shards, against the model"
	$(if $(HOSTS),mkdir -p build/farm && cd build/farm &&) $(abspath $(PY)) -m pytest -p tensorlsu.cosim.farm \
		tb/regress_shards.py -q -p no:cacheprovider \
		$(if $(SHARD),-n 0,$(if $(HOSTS),--dist load $(foreach h,$(HOSTS),--tx $(h)),-n $(JOBS))) \
		--regress-n=$(N) --regress-seed=$(SEED) $(if $(SHARDS),--shards=$(SHARDS)) $(if $(SHARD),--shard=$(SHARD)) \
		--regress-policy=$(if $(filter command line,$(origin POLICY)),$(POLICY),both) \
		--regress-sim=$(if $(filter command line,$(origin SIM)),$(SIM),verilator) \
		$(if $(filter 0,$(PORTS)),--no-regress-ports)

# A CUTLASS-style GEMM mainloop's ldmatrix / stmatrix stream over Swizzle<3,4,3> tiles through the
# RTL on Verilator, against the model (data, bank cycles), with its bytes per clock: make gemm N=1000000
## gemm: a GEMM mainloop's ldmatrix/stmatrix stream through the RTL, with bytes per clock
gemm: $(STAMP)
	$(SAY) "$(N) GEMM mainloop instructions through the RTL (Verilator), against the model"
	$(PY) tb/gemm.py --n $(N) --policy $(POLICY)

# The unit as one Verilog file and its header (form ids, payload fields, error codes, build
# parameters): build/tensorlsu_lsu.v and .vh; tb/verilog/example_tb.v uses them (docs/ports.md).
# Sizes: make verilog SMEM_BYTES=233472 TMEM_COLUMNS=512 AXI_DATA_BITS=256 (python -m tensorlsu.hdl
# --help lists every parameter). FPGA=1: the FPGA build of make synth (DSP multipliers, the row
# buffer in LUT RAM, a 128-bit global port of two contexts).
## verilog: the unit as one Verilog file and its header in build/
verilog: $(STAMP)
	$(SAY) "build/tensorlsu_lsu.v with its header, filelist and FuseSoC core"
	mkdir -p build
	$(PY) -m tensorlsu.hdl --emit-verilog build/tensorlsu_lsu.v --policy $(POLICY) \
		$(if $(SMEM_BYTES),--smem-bytes $(SMEM_BYTES)) $(if $(TMEM_COLUMNS),--tmem-columns $(TMEM_COLUMNS)) \
		$(if $(AXI_DATA_BITS),--axi-data-bits $(AXI_DATA_BITS)) \
		$(if $(FPGA),--fpga)

## test: the test suite on JOBS workers (about 30 minutes on 2 cores, 15 with the simulators built)
test: $(STAMP) debs
	$(SAY) "pytest on $(JOBS) workers: model, RTL (Icarus and Verilator), proofs' smoke, synthesis smoke, types"
	PYTHONWARNINGS=error $(PY) -m pytest tb -q -n $(JOBS) -m "not long"

# The checks too slow for every commit (pytest's `long` marker): other builds of the same paths
## test-long: the checks too slow for every commit
test-long: $(STAMP) debs
	$(SAY) "the tests marked long, on $(JOBS) workers"
	PYTHONWARNINGS=error $(PY) -m pytest tb -q -n $(JOBS) -m long

# The property-based fuzz of the front end, the model, the trace reader and replay at length
# (make test runs it briefly): EXAMPLES a property, at random; prints how many each tried.
EXAMPLES ?= 20000
## fuzz: property-based fuzz of the front end, model, trace reader and replay, at length
fuzz: $(STAMP)
	$(SAY) "$(EXAMPLES) random examples a property"
	TENSORLSU_FUZZ_EXAMPLES=$(EXAMPLES) $(PY) -m pytest tb/sim/test_fuzz.py -q -s -p no:cacheprovider

# On a machine with an NVIDIA GPU and nvcc: capture hardware vectors (tb/hw/README.md).
## capture: on a machine with an NVIDIA GPU and nvcc, capture hardware vectors
capture:
	$(SAY) "hardware vectors from this machine's GPU into tb/data/captured.jsonl"
	$(PYTHON) tb/hw/capture.py --out tb/data/captured.jsonl

# Both synthesis reports, h200 policy, two blocks at a time: ECP5 (Yosys + nextpnr-ecp5, every
# block routed, the whole unit placed) in reports/synth.{md,json}; ASAP7 (Yosys + fakeram7 macros
# + OpenSTA, full size, 2 GHz goal) in reports/asic.{md,json}. One flow: SYNTH_ARGS="--flows asic".
# The long FPGA runs: make synth SYNTH_ARGS="--policies h200 packed --seeds 1 2 3 --route-units";
# the blocks that do not fit the ECP5: SYNTH_ARGS="--flows fpga --blocks tmem_quadrant unit_tmem"
SYNTH_ARGS ?=
## synth: both synthesis reports, ECP5 and ASAP7, in reports/ (about an hour on 2 cores)
synth: $(STAMP) opensta
	$(SAY) "ECP5 (Yosys + nextpnr) and ASAP7 (Yosys + OpenSTA) of every block and the unit, into reports/"
	$(PY) synth/run.py $(SYNTH_ARGS)

# SymbiYosys proofs and covers (formal/specs.py), JOBS at once; the broken variants must fail
## formal: every SymbiYosys proof and cover, JOBS at once (about 40 minutes)
formal: $(STAMP)
	$(SAY) "the SymbiYosys proofs; the broken variants must fail"
	$(PY) formal/run.py --jobs $(JOBS)

# Bytes per clock, cycles per instruction, every form's latency against the silicon's, simulation
# speed: reports/bench.{md,json,png}. Some parts: make bench PARTS="tmem latency"
## bench: bytes per clock, clocks per instruction, latency, simulation speed, into reports/bench.*
bench: $(STAMP)
	$(SAY) "the benchmarks into reports/bench.*"
	$(PY) tb/bench.py $(if $(PARTS),--parts $(PARTS))

## typecheck: mypy over the whole package (make test runs it too)
typecheck: $(STAMP)
	$(SAY) "mypy over the whole package"
	$(PY) tb/typecheck.py

## clean: remove .venv, build/ and reports/
clean:
	rm -rf $(VENV) *.egg-info .pytest_cache build sim_build reports
