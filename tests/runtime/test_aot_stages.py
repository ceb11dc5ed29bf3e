"""The ahead-of-time stages of ``jit(f)`` (JAX's tutorial "Ahead-of-time lowering and compilation" and
``jax.stages``): ``trace`` / ``lower`` / ``compile`` and what each stage says, ``cost_analysis`` counted over the
IR as XLA's ``HloCostAnalysis`` counts, ``memory_analysis``, and the errors of calling a compiled function with
other arguments. Expected values were recorded with jax 0.10.2 (``Lowered.cost_analysis()``: before fusion)."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.transpiler.ir import Function

COST_KEYS = ("flops", "transcendentals", "bytes accessed")


def _costs(fn, *args):
    """``cost_analysis()`` of ``jit(fn).lower(*args)`` (traced, never compiled), restricted to the summary keys."""
    costs = srcjax.jit(fn).lower(*args).cost_analysis()
    return {k: v for k, v in costs.items() if k in COST_KEYS}


def test_trace_lower_compile_describe_the_call():
    def f(x, y):
        return 2 * x + y

    traced = srcjax.jit(f).trace(3, 4)
    assert isinstance(traced, srcjax.stages.Traced) and traced.fun_name == "f"
    assert str(traced.in_tree) == "PyTreeDef(((*, *), {}))" and str(traced.out_tree) == "PyTreeDef(*)"
    (x_aval, y_aval), kwargs = traced.in_avals
    assert kwargs == {} and x_aval.shape == () and x_aval.dtype == np.int32 and x_aval.weak_type
    x_info = traced.args_info[0][0]
    assert isinstance(x_info, srcjax.stages.ArgInfo) and (x_info.shape, x_info.dtype, x_info.donated) == \
        ((), np.int32, False)
    assert traced.out_info == srcjax.ShapeDtypeStruct((), np.int32, weak_type=True)
    assert "mul" in str(traced.jaxpr) and traced.donate_argnums == ()
    assert srcjax.jit(f).eval_shape(3, 4) == srcjax.ShapeDtypeStruct((), np.int32, weak_type=True)

    lowered = traced.lower()
    assert lowered.out_info == srcjax.ShapeDtypeStruct((), np.int32) and lowered.in_tree == traced.in_tree
    assert isinstance(lowered.compiler_ir(), Function) and lowered.compiler_ir("stablehlo") is None
    with pytest.raises(ValueError, match="unknown dialect: mlir"):
        lowered.compiler_ir("mlir")
    # JAX 0.10.2's Lowered.cost_analysis()
    assert lowered.cost_analysis() == {"flops": 2.0, "bytes accessed": 24.0, "utilization0{}": 2.0,
                                       "utilization1{}": 2.0, "bytes accessed0{}": 8.0, "bytes accessed1{}": 8.0,
                                       "bytes accessedout{}": 8.0}

    compiled = lowered.compile()
    assert isinstance(compiled, srcjax.stages.Compiled) and int(compiled(5, 6)) == 16
    assert int(srcjax.stages.Compiled.call(compiled, 1, 2)) == 4
    # JAX 0.10.2's Compiled.cost_analysis(): the fused program reads x and y and writes the result once
    assert compiled.cost_analysis() == {"flops": 2.0, "bytes accessed": 12.0, "utilization0{}": 1.0,
                                        "utilization1{}": 1.0, "bytes accessed0{}": 4.0, "bytes accessed1{}": 4.0,
                                        "bytes accessedout{}": 4.0}
    memory = compiled.memory_analysis()
    assert (memory.argument_size_in_bytes, memory.output_size_in_bytes, memory.alias_size_in_bytes) == (8, 4, 0)
    assert memory.host_temp_size_in_bytes == 0 and memory.peak_memory_in_bytes == 12 + memory.temp_size_in_bytes
    (x_sharding, _), _ = compiled.input_shardings
    assert x_sharding.device == srcjax.devices()[0] and compiled.output_shardings == x_sharding
    assert compiled.out_info == srcjax.ShapeDtypeStruct((), np.int32, sharding=x_sharding)
    assert compiled.runtime_executable() is compiled.native


def test_static_donated_and_keyword_arguments_in_the_stages():
    scale = srcjax.jit(lambda x, n, *, k: {"out": x * n + k}, static_argnums=1, donate_argnums=0)
    traced = scale.trace(jnp.ones((2, 3)), 3, k=1.0)
    assert str(traced.in_tree) == "PyTreeDef(((*,), {'k': *}))"
    (x_info,), kwargs = traced.args_info
    assert x_info.donated and not kwargs["k"].donated and kwargs["k"].dtype == np.float32
    assert traced.donate_argnums == (0,) and traced.out_info["out"].shape == (2, 3)
    compiled = traced.lower().compile()
    np.testing.assert_array_equal(np.asarray(compiled(jnp.ones((2, 3)), k=2.0)["out"]), np.full((2, 3), 5.0))
    memory = compiled.memory_analysis()
    assert memory.argument_size_in_bytes == 28 and memory.output_size_in_bytes == 24
    assert memory.alias_size_in_bytes in (0, 24)  # (24 where the plan writes the result over the donated input)
    with pytest.raises(ValueError, match="no compiler options"):
        traced.lower().compile({"xla_cpu_enable_fast_math": True})
    # a negative number donates nothing (JAX 0.10.2 matches the arguments' indices against the numbers given)
    last = srcjax.jit(lambda a, b: a + b, donate_argnums=-1).trace(jnp.ones(2), jnp.ones(2))
    assert last.donate_argnums == () and not any(info.donated for info in last.args_info[0])


def test_donation_by_name_and_of_keyword_arguments():
    """JAX 0.10.2 completes donate_argnums from donate_argnames and back (for parameters passable either way), donates
    keyword arguments by name, and gives a stage's donate_argnums as indices of the donated leaves."""

    def f(x, y, *, z=None):
        return x + y

    two = lambda: jnp.ones(2)  # noqa: E731
    for jitted, args, kwargs, want in [
        (srcjax.jit(f, donate_argnames="y"), (two(), two()), {}, (1,)),
        (srcjax.jit(f, donate_argnames="y"), (two(),), {"y": two()}, (1,)),
        (srcjax.jit(f, donate_argnums=1), (two(),), {"y": two()}, (1,)),
        (srcjax.jit(f, donate_argnames="z"), (two(), two()), {"z": two()}, (2,)),
        (srcjax.jit(lambda t: t[0] + t[1], donate_argnums=0), ((two(), two()),), {}, (0, 1)),
    ]:
        assert jitted.trace(*args, **kwargs).donate_argnums == want
    x, y = two(), two()
    srcjax.jit(f, donate_argnames="y")(x, y=y)
    assert not x.is_deleted() and y.is_deleted()
    with pytest.raises(ValueError, match=r"invalid argnames \{'q'\} in donate_argnames. Function does not take"):
        srcjax.jit(f, donate_argnames="q")


def test_compiled_function_lays_out_its_results_as_out_shardings_says(four_devices):
    second = srcjax.sharding.SingleDeviceSharding(srcjax.devices()[1])
    compiled = srcjax.jit(lambda x: x * 2, out_shardings=second).lower(jnp.ones(3)).compile()
    assert compiled.output_shardings == second and compiled.out_info.sharding == second
    assert compiled(jnp.ones(3)).sharding == second and compiled(jnp.ones(3)).sharding == second  # (checked, then fast)


def test_compiled_functions_refuse_other_arguments_with_jaxs_messages():
    def f(x, y):
        return 2 * x + y

    i32 = srcjax.ShapeDtypeStruct((), np.int32)
    compiled = srcjax.jit(f).lower(i32, i32).compile()
    assert int(compiled(np.int32(1), np.int64(2))) == 4  # (dtypes as x64 off makes them)
    one = jnp.int32(1)
    assert [int(compiled(one, one)) for _ in range(2)] == [3, 3]  # (the second by the types checked at the first)
    with pytest.raises(TypeError, match=r"Argument 'x' compiled with int32\[\] and called with int32\[2\]"):
        compiled(jnp.ones(2, jnp.int32), one)
    with pytest.raises(TypeError, match=r"Perhaps you are calling the compiled executable with a different "
                                        r"enable_x64 mode than when it was AOT compiled\? The mismatches are:\n"
                                        r"Argument 'x' compiled with int32\[\] and called with float32\[\]\n"
                                        r"Argument 'y' compiled with int32\[\] and called with float32\[\]$"):
        compiled(jnp.float32(72.0), jnp.float32(72.0))
    with pytest.raises(TypeError, match=r"^Argument 'a' of type <class 'str'> is not a valid JAX type$"):
        compiled("a", 2)
    messages = {
        (1,): "There are 1 mismatches, including:\n    * at args, seen tuple of length 2 but now given tuple of "
              "length 1, so the lengths do not match",
        (1, 2, 3): "    * at args, seen tuple of length 2 but now given tuple of length 3, so the lengths do not match",
    }
    for args, message in messages.items():
        with pytest.raises(TypeError, match="Function compiled with input pytree does not match") as info:
            compiled(*args)
        assert message in str(info.value)
    with pytest.raises(TypeError) as info:
        compiled(1, y=2)
    assert "There are 2 mismatches" in str(info.value) and ("* at kwargs, seen <class 'dict'> with 0 child but now "
                                                            "given <class 'dict'> with 1 child, so the numbers of "
                                                            "children do not match, with the symmetric difference "
                                                            "of key sets: {'y'}") in str(info.value)
    with srcjax.disable_jit(), pytest.raises(ValueError, match=r"not supported in the AOT path .* \(jit\(f\)\)"):
        compiled(1, 2)
    tree = srcjax.jit(lambda d: d["a"] + d["b"]).lower({"a": 1.0, "b": 2.0}).compile()
    with pytest.raises(TypeError, match=r"\* at args\[0\], seen <class 'dict'> but now given <class 'list'>, so "
                                        "their Python types differ"):
        tree([1.0, 2.0])
    with pytest.raises(TypeError, match=r"\* at args\[0\], seen <class 'dict'> with 2 children but now given "
                                        r"<class 'dict'> with 1 child, .* key sets: \{'b'\}"):
        tree({"a": 1.0})


def test_cost_analysis_counts_as_xlas_cost_analysis():
    """JAX 0.10.2's ``jit(f).lower(*args).cost_analysis()`` figures (flops, transcendentals, bytes accessed)."""
    f32 = lambda *shape: np.ones(shape, np.float32)  # noqa: E731
    a, b, x = f32(4, 5), f32(5, 3), np.linspace(0.1, 0.9, 10).astype(np.float32)
    cases = [
        (lambda a, b: jnp.tanh(a @ b).sum(), (a, b), {"flops": 131.0, "transcendentals": 12.0,
                                                      "bytes accessed": 340.0}),
        (lambda a: a.sum(0), (a,), {"flops": 15.0, "bytes accessed": 104.0}),
        (lambda a: a.max(1), (a,), {"flops": 16.0, "bytes accessed": 100.0}),
        (lambda a: jnp.cumsum(a, 0), (a,), {"flops": 60.0, "bytes accessed": 164.0}),
        (lambda a: jnp.sort(a, 1), (a,), {"flops": 100.0, "bytes accessed": 160.0}),
        (lambda a: jnp.where(a > 0.5, a, 1.0), (x,), {"flops": 20.0, "bytes accessed": 308.0}),
        (lambda a, c: lax.clamp(c, a, c), (x, x), {"flops": 10.0, "bytes accessed": 160.0}),
        (lambda a: a.astype(jnp.int32), (x,), {"flops": 10.0, "bytes accessed": 80.0}),
        (lambda a: a[2:5] * 2.0, (x,), {"flops": 3.0, "bytes accessed": 76.0}),
        (lambda a: jnp.broadcast_to(a, (3, 10)) + 1.0, (x,), {"flops": 30.0, "bytes accessed": 644.0}),
        (lambda a: lax.reduce_window(a, 0.0, lax.add, (3,), (1,), "VALID"), (x,), {"flops": 16.0,
                                                                                   "bytes accessed": 76.0}),
        (lambda a: jnp.einsum("bij,bjk->bik", a, a.transpose(0, 2, 1)), (f32(2, 3, 4),),
         {"flops": 144.0, "bytes accessed": 264.0}),
        (lambda a, w: lax.conv_general_dilated(a, w, (2, 1), [(1, 2), (0, 1)], (1, 2), (2, 1)),
         (f32(2, 4, 7, 6), f32(6, 4, 3, 2)), {"flops": 7392.0, "bytes accessed": 3504.0}),
        (lambda a, w: lax.conv_general_dilated(a, w, (1, 1), "SAME", feature_group_count=2),
         (f32(2, 4, 7, 6), f32(6, 2, 3, 2)), {"flops": 10032.0, "bytes accessed": 3648.0}),
        (lambda a: jnp.fft.fft(a), (a.astype(np.complex64),), {"flops": 320.0, "bytes accessed": 320.0}),
        (lambda a: jnp.fft.rfft(a), (f32(4, 8),), {"flops": 768.0, "bytes accessed": 288.0}),
        (lambda a: jnp.argmax(a, 1), (a,), {"flops": 144.0, "bytes accessed": 320.0}),
        (lambda a: jnp.argmin(a), (np.arange(12, dtype=np.int32),), {"flops": 77.0, "bytes accessed": 160.0}),
    ]
    for fn, args, want in cases:
        assert _costs(fn, *args) == want, (fn, args)
    # expansions, loops and branches: JAX's flops and transcendentals (its bytes count the HLO ops the expansion or
    # the loop's bookkeeping has, which srcjax's IR does not)
    cases = [
        (lax.logistic, (x,), {"flops": 30.0, "transcendentals": 10.0}),
        (lax.lgamma, (x,), {"flops": 530.0, "transcendentals": 40.0}),
        (lambda a: lax.integer_pow(a, 3), (x,), {"flops": 20.0}),
        (lambda a: lax.fori_loop(0, 5, lambda i, c: c * 2.0 + 1.0, a), (x,), {"flops": 22.0}),
        (lambda p, a: lax.cond(p, jnp.sin, lambda z: z * 2.0 + 1.0, a), (True, x), {"flops": 21.0,
                                                                                  "transcendentals": 10.0}),
        (lambda i, a: lax.select_n(i, a, a * 2, a * 3), (np.arange(10, dtype=np.int32) % 3, x), {"flops": 60.0}),
        (lax.conj, ((x + 1j * x).astype(np.complex64),), {"flops": 40.0}),
        (lambda a: lax.bitcast_convert_type(a, jnp.int32), (x,), {"flops": 10.0}),
    ]
    for fn, args, want in cases:
        got = _costs(fn, *args)
        assert {k: v for k, v in got.items() if k != "bytes accessed"} == want, (fn, args)
    assert srcjax.jit(lambda v: v).lower(1.0).cost_analysis() == {}  # (XLA's dict leaves zero counts out)
    # whole dicts: the bytes and utilization of each operand (an in-place update reads none of its operand; a
    # transpose counts no bytes; a switch adds the clamping of its index)
    whole = [
        (lambda a: lax.dynamic_update_slice(a, a[:3], (2,)), (x,),
         {"bytes accessed": 52.0, "utilization0{}": 1.0, "utilization1{}": 1.0, "utilization2{}": 1.0,
          "bytes accessed0{}": 12.0, "bytes accessed1{}": 12.0, "bytes accessed2{}": 4.0, "bytes accessedout{}": 24.0}),
        (lambda i, a: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], a), (1, x),
         {"flops": 1.0, "transcendentals": 10.0, "bytes accessed": 96.0, "utilization0{}": 2.0, "utilization1{}": 1.0,
          "utilization2{}": 1.0, "bytes accessed0{}": 44.0, "bytes accessed1{}": 4.0, "bytes accessed2{}": 4.0,
          "bytes accessedout{}": 44.0}),
        (lambda m: m.T + 1.0, (a,), {"flops": 20.0, "bytes accessed": 324.0, "utilization0{}": 3.0,
                                     "utilization1{}": 1.0, "bytes accessed0{}": 84.0, "bytes accessed1{}": 80.0,
                                     "bytes accessedout{}": 160.0}),
        # (a scalar bound is broadcast; the index arithmetic's constants of one value are broadcast scalars)
        (lambda v: lax.clamp(0.2, v, 0.5), (f32(12),),
         {"flops": 12.0, "bytes accessed": 296.0, "utilization0{}": 3.0, "utilization1{}": 1.0,
          "utilization2{}": 1.0, "bytes accessed0{}": 56.0, "bytes accessed1{}": 48.0, "bytes accessed2{}": 48.0,
          "bytes accessedout{}": 144.0}),
        (lambda v, i, u: v.at[i].add(u), (f32(12), np.array([1, 3], np.int32), f32(2)),
         {"flops": 8.0, "bytes accessed": 140.0, "utilization0{}": 7.0, "utilization1{}": 4.0,
          "utilization2{}": 2.0, "bytes accessed0{}": 42.0, "bytes accessed1{}": 32.0, "bytes accessed2{}": 16.0,
          "bytes accessedout{}": 50.0}),
        # (several results leave as a tuple; each result of the sort is taken out of its tuple)
        (lambda v: lax.sort((v, v + 1, v), num_keys=1), (f32(12),),
         {"flops": 60.0, "bytes accessed": 508.0, "utilization0{}": 7.0, "utilization1{}": 3.0,
          "utilization2{}": 2.0, "bytes accessed0{}": 100.0, "bytes accessed1{}": 96.0, "bytes accessed2{}": 48.0,
          "bytes accessedout{}": 264.0}),
    ]
    for fn, args, want in whole:
        assert srcjax.jit(fn).lower(*args).cost_analysis() == want, (fn, args)


def test_compiled_cost_analysis_counts_the_fused_steps():
    """The native code's steps read and write whole buffers once (the product, then the reduction with the tanh
    fused in): JAX 0.10.2's Compiled figures; the op-by-op figures of ``Lowered`` count 340 bytes."""
    lowered = srcjax.jit(lambda a, b: jnp.tanh(a @ b).sum()).lower(np.ones((4, 5), np.float32),
                                                                   np.ones((5, 3), np.float32))
    compiled = {k: v for k, v in lowered.compile().cost_analysis().items() if k in COST_KEYS}
    assert compiled == {"flops": 131.0, "transcendentals": 12.0, "bytes accessed": 240.0}
    looped = srcjax.jit(lambda v: lax.fori_loop(0, 5, lambda i, c: c * 2.0 + 1.0, v)).lower(np.ones(10, np.float32))
    assert looped.compile().cost_analysis() == looped.cost_analysis()  # (a plan with loops counts op by op)


def test_cost_analysis_of_float64(x64):
    """The bytes follow the dtypes (JAX 0.10.2's figures with x64 on)."""
    a, b = np.ones((4, 5)), np.ones((5, 3))
    assert _costs(lambda a, b: jnp.tanh(a @ b).sum(), a, b) == {"flops": 131.0, "transcendentals": 12.0,
                                                                 "bytes accessed": 680.0}
