"""Every example program runs at a small size and prints what its tutorial prints."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

# What each seed program must print (numbers from the tutorials).
EXPECTED = {
    "seed_000_quickstart.py": ["-0.3721109", "0.26423115", "0.5673026", "[0.25       0.19661194 0.10499357]",
                               "-0.03532", "0.5403023", "0.43879128", "767.02"],
    "seed_001_vmap_and_grad.py": ["[11. 20. 29.]", "loss 3.0519385", "-0.16965", "-0.29227",
                                  "0.070650816", "-0.19909", "check_grads: order 2 passed"],
    "seed_002_tutorial.py": ["[4146024105  967050713]", "[-1.2515389]", "0.14389051", "-0.75488514",
                             "[[3. 2. 3. 4.]", "w=3.000 b=2.000"],
    "seed_003_slides.py": ["0.761594", "0.4199743"],
    "seed_004_numpy_api.py": ["[0 1 2 3 4 5 6 7 8 9]", "30.0", "Array([123,   2,   3], dtype=int32)",
                              "[2. 4. 6. 8.]", "-0.20000005"],
    "mlp.py": ["accuracy 1.000"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--small"], capture_output=True, text=True, timeout=300,
        cwd=EXAMPLES,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for text in EXPECTED[name]:
        assert text in result.stdout, f"{text!r} not printed by {name}:\n{result.stdout}"


def test_bench_runs_small():
    result = subprocess.run([sys.executable, str(EXAMPLES / "bench.py"), "--small", "-k", "add"],
                            capture_output=True, text=True, timeout=300, cwd=EXAMPLES)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "add, 4 elements" in result.stdout
