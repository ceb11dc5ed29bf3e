# make test   create .venv if missing, install srcjax with its test extras, run the test suite (codegen twice)
# make demo   same set-up, then run the seed tutorials in examples/
# make bench  same set-up, then print the benchmark tables (NumPy and, when importable, JAX beside us)

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-srcjax

.PHONY: test demo bench lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip setuptools
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

# The codegen tests run a second time compiling for the x86-64 baseline with SSE4.2 (no AVX, no FMA), so that a
# test assuming the features of the machine it runs on fails on every machine, not only on those that lack them.
BASELINE_CPU := x86-64-v2

test: $(STAMP)
	$(PY) -m pytest -q
	if [ "$$(uname -m)" = x86_64 ]; then SRCJAX_CPU=$(BASELINE_CPU) $(PY) -m pytest -q -p no:cacheprovider tests/codegen; fi

demo: $(STAMP)
	@for f in examples/seed_*.py examples/mlp.py; do \
		echo "== $$f"; $(PY) $$f || exit 1; \
	done

bench: $(STAMP)
	$(PY) examples/bench.py

lint: $(STAMP)
	$(PY) -m pip install --quiet ruff
	$(PY) -m ruff check transpiler codegen runtime srcjax tests examples

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
