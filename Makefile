# make test   create .venv if missing, install srcjax with its test extras, run the test suite (codegen twice)
# make demo   same set-up, then run the seed tutorials in examples/
# make bench  same set-up, then print the benchmark tables (NumPy and, when importable, JAX beside us);
#             make bench LOAD=N runs them with N background processes spinning
# make fuzz   same set-up, then fuzz until interrupted (FUZZ_SECONDS=N stops after N s, FUZZ_START=SEED picks the
#             first seed): prints programs per second and failures; new failures, shrunk, go to tests/fuzz/findings/

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-srcjax

.PHONY: test demo bench fuzz lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip setuptools
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,mpi]'
	touch $(STAMP)

# The codegen tests run a second time compiling for the x86-64 baseline with SSE4.2 (no AVX, no FMA), so that a
# test assuming the features of the machine it runs on fails on every machine, not only on those that lack them.
# (Not the GPU kernels' emulation: its code assumes the GPU's fused multiply-add whatever the host has; nor the
# bounds on memory over a thousand compilations, which do not depend on the instruction set.)
BASELINE_CPU := x86-64-v2

# SRCJAX_REQUIRE_MPI: the tests of several processes under mpiexec fail rather than skip if MPI is missing.
test: $(STAMP)
	SRCJAX_REQUIRE_MPI=1 $(PY) -m pytest -q
	if [ "$$(uname -m)" = x86_64 ]; then SRCJAX_CPU=$(BASELINE_CPU) $(PY) -m pytest -q -p no:cacheprovider tests/codegen \
		--ignore=tests/codegen/test_ptx_emulation.py \
		--deselect tests/codegen/test_cache_bounds.py::test_twelve_hundred_fresh_closures_stay_within_fixed_memory_and_disk; fi

demo: $(STAMP)
	@for f in examples/seed_*.py examples/mlp.py; do \
		echo "== $$f"; $(PY) $$f || exit 1; \
	done

bench: $(STAMP)
	$(PY) examples/bench.py $(if $(LOAD),--load $(LOAD))
	$(PY) examples/bench_parallel.py
	$(PY) examples/bench_gpu.py

# Each program is new code, so the disk cache of compiled code is left off (SRCJAX_CACHE=0).
fuzz: $(STAMP)
	SRCJAX_CACHE=0 $(PY) -m tests.fuzz.fuzz

lint: $(STAMP)
	$(PY) -m pip install --quiet ruff
	$(PY) -m ruff check transpiler codegen runtime srcjax tests examples

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
