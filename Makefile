# tensorlsu — `make sim` runs the main job, `make test` the tests; both set up .venv first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TRACE  ?= tb/data/h200_sm90.jsonl

.PHONY: all venv sim test replay capture synth formal bench clean

all: test

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# Main job: replay the hardware vectors through the reference model, per-form table.
sim: $(STAMP)
	$(PY) -m tensorlsu.sim replay $(TRACE)

replay: sim

test: $(STAMP)
	PYTHONWARNINGS=error $(PY) -m pytest tb -q

# On a machine with an NVIDIA GPU and nvcc: capture hardware vectors (tb/hw/README.md).
capture:
	$(PYTHON) tb/hw/capture.py --out tb/data/captured.jsonl

synth formal bench:
	@echo "make $@: the RTL does not exist yet (see docs/ARCHITECTURE.md, 'Status')" >&2; exit 2

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache build sim_build reports
