"""Ctrl-C stops a compiled loop that never ends (codegen/llvm/interrupt.py): KeyboardInterrupt within a second,
no partial result, and the process goes on working. Each case runs in a subprocess that gets SIGINT."""

import os
import signal
import subprocess
import sys
import time

import pytest

PROGRAM = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # (a background job may have inherited SIG_IGN)
import srcjax as jax, srcjax.numpy as jnp

@jax.jit
def forever(x):
    while jnp.sum(x) > 0:  # (float32 x + 1 stops growing at 2**24: the condition holds for ever)
        x = x + 1.0
    return x

@jax.jit
def counted(x, n):
    for i in range(n):  # a for loop on a traced trip count
        x = jnp.sin(x) + 1.0
    return x

x = jnp.ones({size})
{compile}  # (compiled before "started": lower() alone leaves it to the first call, which a loaded machine made
           # last past the signal, so the 'queued' case's call raised before its result was bound)
print("started", flush=True)
start = time.time()
try:
    {run}
    print("finished!?", flush=True)
except KeyboardInterrupt:
    print(f"interrupted {{time.time() - start:.3f}}", flush=True)
{after}
print("still works", float(jax.jit(lambda v: jnp.sum(v * 2.0))(jnp.ones(5))), flush=True)
"""

CASES = {
    # a small call runs on the calling thread
    "while, called here": dict(size=10, compile="forever.lower(x).compile()", run="forever(x).block_until_ready()",
                               after=""),
    "for, called here": dict(size=10, compile="counted.lower(x, 2**31 - 1).compile()",
                             run="counted(x, 2**31 - 1).block_until_ready()", after=""),
    # a large one is queued on the dispatch thread; its result then raises too, instead of holding garbage
    "while, queued": dict(
        size=3_000_000, compile="forever.lower(x).compile()", run="y = forever(x); time.sleep(30)",
        after="try:\n    y.block_until_ready()\nexcept KeyboardInterrupt as e:\n    print('result raises', repr(e))",
    ),
}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the SIGINT chain is Linux's")
@pytest.mark.parametrize("case", sorted(CASES))
def test_sigint_stops_a_compiled_loop_within_a_second(case, tmp_path):
    env = {**os.environ, "SRCJAX_CACHE": "0"}
    (tmp_path / "loop.py").write_text(PROGRAM.format(**CASES[case]))  # (srcjax reads the source of what it jits)
    process = subprocess.Popen(
        [sys.executable, "loop.py"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    try:
        assert process.stdout.readline().strip() == "started"
        time.sleep(0.3)  # well inside the loop
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert "interrupted" in lines, (out, err)
    assert float(lines["interrupted"]) < 0.3 + 1.0
    assert lines.get("still") == "works 10.0", (out, err)
    if "queued" in case:
        assert lines["result"] == "raises KeyboardInterrupt('a compiled loop was interrupted')"


def test_loops_without_a_signal_run_to_their_end():
    import numpy as np

    import srcjax
    import srcjax.numpy as jnp

    @srcjax.jit
    def halve(x):
        while jnp.max(x) > 1.0:
            x = x / 2.0
        return x

    x = np.float32([64.0, 3.0])
    assert halve.lower(x).compile().native is not None
    np.testing.assert_array_equal(np.asarray(halve(x)), [1.0, 3.0 / 64.0])
