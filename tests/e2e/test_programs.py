"""Programs written for JAX (examples/programs) run under srcjax at a small size: they train (the held-out
loss falls) and every number they print is finite. Each runs in a fresh interpreter, as a user would."""

import math
import pathlib
import re
import subprocess
import sys

import pytest

PROGRAMS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "programs"

# program -> (arguments for a run of seconds, the per-epoch metric, whether it should fall or rise)
CASES = {
    "mnist_classifier_fromscratch.py": (["--num-train", "1024", "--num-test", "256", "--batch-size", "128",
                                         "--epochs", "2", "--hidden", "128"], "test loss", "falls"),
    "mnist_classifier.py": (["--num-train", "1024", "--num-test", "256", "--batch-size", "128", "--epochs", "2"],
                            "test loss", "falls"),
    "mnist_vae.py": (["--num-train", "512", "--num-test", "128", "--batch-size", "64", "--epochs", "2",
                      "--step-size", "0.003"], "test elbo", "rises"),
    "differentially_private_sgd.py": (["--num-train", "512", "--num-test", "128", "--batch-size", "64",
                                       "--epochs", "2", "--learning-rate", "0.5", "--noise-multiplier", "0.1"],
                                      "test loss", "falls"),
}
NUMBER = r"(-?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf))"


def run_program(name: str, args: list[str]) -> str:
    result = subprocess.run([sys.executable, str(PROGRAMS / name), "--backend", "srcjax", *args],
                            capture_output=True, text=True, timeout=600, cwd=PROGRAMS)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_trains(name):
    args, metric, direction = CASES[name]
    out = run_program(name, args)
    assert "backend srcjax" in out, out
    per_epoch = [float(v) for v in re.findall(rf"{metric} {NUMBER}", out)]
    assert len(per_epoch) == 3, f"expected the metric before training and after 2 epochs:\n{out}"
    numbers = [float(v) for line in out.splitlines() if line.startswith("epoch")
               for v in re.findall(rf"(?<![\w.]){NUMBER}(?=s?\b)", line)]
    assert numbers and all(math.isfinite(v) for v in numbers), out
    first, last = per_epoch[0], per_epoch[-1]
    assert (last < first) if direction == "falls" else (last > first), f"{metric} did not {direction[:-1]}:\n{out}"


def test_backend_switch_is_the_only_difference():
    """The programs select their library with one import block; the rest is what a JAX user writes."""
    for path in sorted(PROGRAMS.glob("*.py")):
        text = path.read_text()
        if "backend(sys.argv)" not in text:
            continue
        body = text[text.index("# ---- from here on: a plain JAX program ----"):]
        body = "\n".join(line for line in body.splitlines() if '"--backend"' not in line)  # (the flag's help)
        assert "srcjax" not in body, f"{path.name} names srcjax outside its import switch"
