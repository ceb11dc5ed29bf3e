"""The ``Sharding`` classes, the mesh in context (``set_mesh``, ``reshard``, ``auto_axes``, ``explicit_axes``),
``typeof(x).sharding``, ``jax.debug``'s sharding views, arrays assembled from parts, ``smap``, ``fwd_and_bwd`` and
``JaxRuntimeError``, against JAX 0.10.2's recorded behaviour on four virtual CPU devices."""

import copy
import pickle

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.runtime import debug_sharding
from srcjax.sharding import (
    AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec as P, Sharding, SingleDeviceSharding,
)

pytestmark = pytest.mark.usefixtures("cpu_backend", "four_devices")

ABSTRACT_2X2 = ("AbstractMesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit), device_kind=cpu, num_cores=None, "
                "platform=cpu)")


def test_shardings_share_the_sharding_base_class():
    mesh = srcjax.make_mesh((2, 2), ("x", "y"))
    devices = srcjax.devices()
    s = NamedSharding(mesh, P("x"))
    single = jnp.ones(3).sharding
    assert isinstance(s, Sharding) and isinstance(single, Sharding) and isinstance(single, SingleDeviceSharding)
    assert (s.num_devices, s.memory_kind, s.is_fully_addressable, s.is_fully_replicated) == (4, "device", True, False)
    assert s.addressable_devices == s.device_set == set(devices) and s.has_addressable_devices
    assert s.shard_shape((4, 6)) == (2, 6) and NamedSharding(mesh, P("x", "y")).shard_shape((4, 6)) == (2, 3)
    # (JAX 0.10.2's map)
    assert s.devices_indices_map((4, 2)) == {devices[0]: (slice(0, 2), slice(None)), devices[1]: (slice(0, 2),
                                             slice(None)), devices[2]: (slice(2, 4), slice(None)),
                                             devices[3]: (slice(2, 4), slice(None))}
    assert s.addressable_devices_indices_map((4, 2)) == s.devices_indices_map((4, 2))
    with pytest.raises(ValueError, match=r"axis 0 is partitioned 2 times, but the dimension size is 3"):
        s.shard_shape((3, 4))
    assert s.is_equivalent_to(NamedSharding(mesh, P("x", None)), 2) and s != NamedSharding(mesh, P("x", None))
    assert not s.is_equivalent_to(NamedSharding(mesh, P("y")), 2)
    assert not NamedSharding(mesh, P()).is_equivalent_to(SingleDeviceSharding(devices[0]), 2)
    one = srcjax.make_mesh((1,), ("a",))
    assert NamedSharding(one, P("a")).is_equivalent_to(SingleDeviceSharding(devices[0]), 2)
    host = s.with_memory_kind("pinned_host")
    assert host.memory_kind == "pinned_host" and host.spec == s.spec and s.update(spec=("y",)).spec == P("y")
    with pytest.raises(ValueError, match="can address the following memory kinds: device, pinned_host"):
        s.with_memory_kind("foo")
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh: \('x', 'y'\)"):
        NamedSharding(mesh, P("z"))
    with pytest.raises(Exception, match="has duplicate entries for `x`"):
        NamedSharding(mesh, P("x", "x"))
    assert (single.num_devices, single.shard_shape((3,)), single.devices_indices_map((3, 2))) == \
        (1, (3,), {devices[0]: (slice(None), slice(None))})
    assert srcjax.sharding.make_single_device_sharding(devices[2]) == SingleDeviceSharding(devices[2],
                                                                                           memory_kind="device")
    assert P(("x",)) == P("x") and P(()) == P(None) and P(["x", "y"]) == P(("x", "y"))  # (JAX's spellings)
    assert pickle.loads(pickle.dumps(P("x", ("x", "y")))) == P("x", ("x", "y")) and copy.copy(P()) == P()
    assert pickle.loads(pickle.dumps(s.with_memory_kind("pinned_host"))) == s.with_memory_kind("pinned_host")
    # (JAX 0.10.2's reprs: make_mesh's axes are Explicit)
    assert repr(mesh.abstract_mesh) == ABSTRACT_2X2
    assert repr(AbstractMesh((2,), ("a",), AxisType.Explicit)) == "AbstractMesh('a': 2, axis_types=(Explicit,))"
    assert repr(srcjax.sharding.get_mesh()) == "Mesh(axis_sizes=(), axis_names=())"
    assert repr(srcjax.sharding.get_abstract_mesh()) == "AbstractMesh((), axis_types=())"


def test_set_mesh_reshard_and_the_sharding_of_a_type():
    mesh = srcjax.make_mesh((2, 2), ("x", "y"))
    x = jnp.arange(16.0).reshape(4, 4)
    with pytest.raises(ValueError, match="Using PartitionSpec when you are not under a mesh context"):
        srcjax.reshard(x, P("x"))
    y = srcjax.reshard(x, NamedSharding(mesh, P("x")))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert y.sharding == NamedSharding(mesh, P("x", None))  # (the spec padded to the rank, as JAX's)
    assert repr(srcjax.typeof(y).sharding) == f"NamedSharding(mesh={ABSTRACT_2X2}, spec=P('x', None))"
    assert srcjax.typeof(y) == srcjax.typeof(x) and srcjax.typeof(y).shape == (4, 4)
    # (JAX 0.10.2's spellings of types)
    assert str(srcjax.typeof(y)) == "float32[4@x,4]" and repr(srcjax.typeof(x)) == "ShapedArray(float32[4,4])"
    assert str(srcjax.typeof(1.0)) == "~float32[]" and repr(srcjax.typeof(1.0)) == \
        "ShapedArray(float32[], weak_type=True)"
    assert repr(srcjax.typeof(x).sharding) == "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None, None))"
    auto = Mesh(mesh.devices, ("x", "y"))  # (Auto axes: not in the type, and reshard refuses them)
    assert auto != mesh and srcjax.sharding.get_mesh() == srcjax.sharding.get_mesh()  # (JAX's: types count)
    assert srcjax.typeof(srcjax.device_put(x, NamedSharding(auto, P("x")))).sharding.spec == P(None, None)
    with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
        srcjax.reshard(x, NamedSharding(auto, P("x")))
    typed = srcjax.ShapeDtypeStruct((4, 4), np.float32, sharding=NamedSharding(mesh, P("x")))
    assert typed.sharding == NamedSharding(mesh, P("x")) and typed != srcjax.ShapeDtypeStruct((4, 4), np.float32)
    with pytest.raises(TypeError, match="When specifying PartitionSpec to `ShapeDtypeStruct`, the context mesh"):
        srcjax.ShapeDtypeStruct((4,), np.float32, sharding=P("x"))
    with srcjax.set_mesh(mesh):
        assert srcjax.ShapeDtypeStruct((4,), np.float32, sharding=P("y")).sharding == NamedSharding(mesh, P("y"))
        assert srcjax.sharding.get_mesh() is mesh and repr(srcjax.sharding.get_abstract_mesh()) == ABSTRACT_2X2
        z = srcjax.reshard(x, P(None, "y"))
        assert z.sharding == NamedSharding(mesh, P(None, "y")) and srcjax.device_put(x, P("x")).sharding.spec == P("x")
        tree = srcjax.reshard({"a": x, "b": (np.ones(2), 3.0)}, {"a": P("x"), "b": (P("y"), P())})
        assert [leaf.sharding.spec for leaf in srcjax.tree_util.tree_leaves(tree)] == [P("x", None), P("y"), P()]
        assert tree["b"][1].weak_type

        @srcjax.jit
        def f(a):
            return srcjax.reshard(a, P("y", None)), a * 2

        b, c = f(x)
        np.testing.assert_array_equal(np.asarray(b), np.asarray(x))
        assert b.sharding == NamedSharding(mesh, P("y", None)) and isinstance(c.sharding, SingleDeviceSharding)
        seen = []
        doubled = srcjax.sharding.auto_axes(lambda a: seen.append(srcjax.sharding.get_abstract_mesh()) or a * 2,
                                            out_sharding=P("x"))(z)
        assert seen[0].axis_types == (AxisType.Auto, AxisType.Auto) and doubled.sharding.spec == P("x", None)
        np.testing.assert_array_equal(np.asarray(doubled), 2 * np.asarray(x))
        with pytest.raises(TypeError, match="Missing required keyword argument: 'out_sharding'"):
            srcjax.sharding.auto_axes(lambda a: a)(x)
    assert srcjax.sharding.get_abstract_mesh().empty and srcjax.sharding.get_mesh().empty
    with pytest.raises(ValueError, match="Context mesh cannot be empty"):
        srcjax.sharding.explicit_axes(lambda a: a, in_sharding=P("x"))(x)
    with srcjax.set_mesh(auto):
        spec = []
        srcjax.sharding.explicit_axes(lambda a: spec.append(srcjax.typeof(a).sharding.spec), in_sharding=P("x"))(x)
        assert spec == [P("x", None)]
    with pytest.raises(ValueError, match="non-None and have a non-empty mesh"):
        srcjax.reshard(x, None)
    with pytest.raises(ValueError, match="Expected mesh of type `jax.sharding.Mesh`"):
        srcjax.set_mesh(3)
    srcjax.set_mesh(mesh)  # (as a plain call: in context until changed)
    try:
        assert srcjax.sharding.get_abstract_mesh() == mesh.abstract_mesh
    finally:
        srcjax.set_mesh(None)
    assert srcjax.sharding.get_abstract_mesh().empty


# JAX 0.10.2's drawings (rich, no colour) of a 2x2 mesh's layouts; the plain-text table draws the same
JAX_TABLES = {
    ((4, 4), ("x", "y")): """\
┌──────────┬──────────┐
│          │          │
│  CPU 0   │  CPU 1   │
│          │          │
│          │          │
├──────────┼──────────┤
│          │          │
│  CPU 2   │  CPU 3   │
│          │          │
│          │          │
└──────────┴──────────┘
""",
    ((8,), (("x", "y"),)): """\
┌───────┬───────┬───────┬───────┐
│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │
└───────┴───────┴───────┴───────┘
""",
    ((4,), ()): """\
┌───────────┐
│CPU 0,1,2,3│
└───────────┘
""",
}


def test_inspect_and_visualize_array_sharding(capsys, monkeypatch):
    mesh = srcjax.make_mesh((2, 2), ("x", "y"))
    x = srcjax.device_put(jnp.zeros(8), NamedSharding(mesh, P("x")))
    seen = []
    srcjax.debug.inspect_array_sharding({"a": x, "b": jnp.ones(2)}, callback=seen.append)
    assert seen == [x.sharding, jnp.ones(2).sharding]

    @srcjax.jit
    def f(a):
        srcjax.debug.inspect_array_sharding(jnp.sin(a), callback=seen.append)
        return a

    f(x), f(x)  # (called when the function is compiled, as JAX's is)
    assert seen[2:] == [SingleDeviceSharding(srcjax.devices()[0])]

    @srcjax.jit
    def g(a):
        b = srcjax.reshard(a, P("x"))
        srcjax.debug.inspect_array_sharding(b, callback=seen.append)
        seen.append(srcjax.typeof(b).sharding.spec)
        return b

    with srcjax.set_mesh(mesh):
        g(jnp.ones((4, 2)))
    # (JAX 0.10.2's: the compiler's view of a reshard's result, over the mesh made Auto; its type names the axis)
    assert seen[3:] == [NamedSharding(Mesh(mesh.devices, ("x", "y")), P("x")), P("x", None)]
    monkeypatch.setattr(debug_sharding, "have_rich", lambda: False)  # (the plain-text table, rich or not)
    for (shape, spec), drawn in JAX_TABLES.items():
        srcjax.debug.visualize_array_sharding(srcjax.device_put(jnp.zeros(shape), NamedSharding(mesh, P(*spec))))
        assert capsys.readouterr().out == drawn
    # (too wide for max_width: rich's fitting, wrapping and ellipses, as JAX 0.10.2 draws it)
    srcjax.debug.visualize_sharding((4, 8), NamedSharding(mesh, P(None, "y")), max_width=40)
    assert capsys.readouterr().out == "\n".join([
        "┌───────────────────┬──────────────────┐", *["│                   │                  │"] * 4,
        "│        CPU        │        C…        │", "│        0,2        │        1…        │",
        *["│                   │                  │"] * 4, "└───────────────────┴──────────────────┘", ""])
    with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
        srcjax.debug.visualize_sharding((2, 2, 2), x.sharding)


def test_arrays_from_parts():
    mesh = srcjax.make_mesh((2, 2), ("x", "y"))
    s = NamedSharding(mesh, P("x"))
    devices = srcjax.devices()
    parts = [srcjax.device_put(jnp.full((2, 3), i), d) for i, d in reversed(list(enumerate(devices)))]
    out = srcjax.make_array_from_single_device_arrays((4, 3), s, parts)
    np.testing.assert_array_equal(np.asarray(out), np.repeat([[0], [2]], 2, axis=0) * np.ones((1, 3)))
    assert out.sharding == s and out.dtype == np.int32 and not out.weak_type
    with pytest.raises(ValueError, match="Expected 4 per-device arrays"):
        srcjax.make_array_from_single_device_arrays((4, 3), s, parts[:2])
    with pytest.raises(ValueError, match=r"must be from distinct devices, but got device IDs \[0, 0, 0, 0\]"):
        srcjax.make_array_from_single_device_arrays((4, 3), s, [jnp.ones((2, 3))] * 4)
    with pytest.raises(TypeError, match="Unsupported type for elements in `arrays`"):
        srcjax.make_array_from_single_device_arrays((4, 3), s, [np.ones((2, 3))] * 4)
    with pytest.raises(ValueError, match=r"Expected shard shape \(2, 3\) doesn't match"):
        srcjax.make_array_from_single_device_arrays((4, 3), s, [srcjax.device_put(jnp.ones((3, 3)), d)
                                                                for d in devices])
    with pytest.raises(ValueError, match="must match the dtype of the addressable shards"):
        srcjax.make_array_from_single_device_arrays((4, 3), s, parts, dtype=np.float32)
    local = srcjax.make_array_from_process_local_data(s, np.arange(12.0).reshape(4, 3))
    assert local.sharding == s and local.dtype == np.float32  # (float64 data, x64 off: JAX's float32)
    np.testing.assert_array_equal(np.asarray(local), np.arange(12.0).reshape(4, 3))
    with pytest.raises(ValueError, match="global_shape should be None or equal to local_data.shape"):
        srcjax.make_array_from_process_local_data(s, np.ones((4, 3)), (8, 3))
    with pytest.raises(ValueError, match="partitioned 2 times"):
        srcjax.make_array_from_process_local_data(s, np.ones((3, 3)))
    tree = {"a": local, "b": 3}
    assert srcjax.copy_to_host_async(tree) is tree


def test_smap_fwd_and_bwd_and_runtime_errors():
    mesh = srcjax.make_mesh((2, 2), ("x", "y"))
    with pytest.raises(ValueError, match="The context mesh cannot be empty"):
        srcjax.smap(lambda a: a, in_axes=0, out_axes=0, axis_name="x")(jnp.ones(4))
    with srcjax.set_mesh(mesh):
        centred = srcjax.smap(lambda a: a - lax.psum(a, "x"), in_axes=0, out_axes=0, axis_name="x")(
            jnp.arange(8.0).reshape(4, 2))
        assert np.asarray(centred).tolist() == [[-4.0, -5.0], [-6.0, -7.0], [0.0, -1.0], [-2.0, -3.0]]  # (JAX's)
        assert centred.sharding == NamedSharding(mesh, P("x", None))
        scaled, total = srcjax.smap(lambda a, b: (a * lax.axis_index("y"), b.sum()), in_axes=(1, None),
                                    out_axes=(1, None), axis_name="y")(jnp.arange(8.0).reshape(2, 4), jnp.ones(3))
        assert np.asarray(scaled).tolist() == [[0, 0, 2, 3], [0, 0, 6, 7]] and float(total) == 3.0
        assert scaled.sharding.spec == P(None, "y") and total.sharding.spec == P()
        inferred = srcjax.smap(lambda a: a.sum(0, keepdims=True), out_axes=0, axis_name="x")(
            srcjax.reshard(jnp.arange(8.0).reshape(4, 2), P("x")))
        assert np.asarray(inferred).tolist() == [[2.0, 4.0], [10.0, 12.0]]
        with pytest.raises(TypeError, match="smap axis_name should be a `str`"):
            srcjax.smap(lambda a: a, in_axes=0, out_axes=0, axis_name=("x",))
        # shard_map's mesh from the context, its in_specs from the arguments' layouts (JAX 0.10.2's defaults)
        laid = srcjax.reshard(jnp.arange(8.0).reshape(2, 4), P("x", "y"))
        summed = srcjax.shard_map(lambda a: lax.psum(a, "x") * lax.axis_index("y"), out_specs=P(None, "y"))(laid)
        assert np.asarray(summed).tolist() == [[0.0, 0.0, 8.0, 10.0]] and summed.sharding.spec == P(None, "y")  # (JAX)
        with pytest.raises(ValueError, match="does not match the specs of the input"):  # (all Explicit: JAX's)
            srcjax.shard_map(lambda a: a, in_specs=P("x"), out_specs=P("x"))(jnp.ones(4))
    with pytest.raises(TypeError, match="in_specs argument must be a pytree"):  # (Auto axes: no types to read)
        srcjax.shard_map(lambda a: a, mesh=Mesh(mesh.devices, ("x", "y")), out_specs=P())(jnp.ones(4))
    with srcjax.set_mesh(srcjax.make_mesh((4,), ("x",))):
        double = srcjax.smap(lambda a: a * 2, in_axes=0, out_axes=0, axis_name="x")
        with pytest.raises(ValueError, match="does not match the specs of the input"):
            double(jnp.ones(4))  # (JAX's: mapped over every axis, all Explicit, the input must be laid out so)
        assert np.asarray(double(srcjax.reshard(jnp.ones(4), P("x")))).tolist() == [2.0] * 4
    from srcjax.experimental.shard_map import shard_map as older  # (JAX's older signature: mesh, specs by position)

    line = Mesh(np.array(srcjax.devices()), ("i",))
    assert np.asarray(older(lambda a: a * 2, line, P("i"), P("i"))(jnp.arange(4.0))).tolist() == [0.0, 2.0, 4.0, 6.0]
    fwd, bwd = srcjax.fwd_and_bwd(lambda x, w: jnp.sin(x @ w), argnums=(0, 1), jitted=False)
    y, residuals = fwd(jnp.ones((2, 2)), jnp.arange(4.0).reshape(2, 2))
    dx, dw = bwd(residuals, jnp.ones((2, 2)))
    np.testing.assert_allclose(np.asarray(dx), [[-0.6536436, -2.7932246]] * 2, rtol=1e-6)  # (JAX's)
    np.testing.assert_allclose(np.asarray(dw), [[-0.8322937, -1.3072872]] * 2, rtol=1e-6)
    fwd, bwd = srcjax.fwd_and_bwd(lambda x: (jnp.sum(x ** 2), x[0]), argnums=0, has_aux=True, jitted=False)
    y, residuals, aux = fwd(jnp.arange(3.0))
    assert float(y) == 5.0 and float(aux) == 0.0 and np.asarray(bwd(residuals, 1.0)).tolist() == [0.0, 2.0, 4.0]

    def boom(a):
        raise KeyError("from the callback")

    with pytest.raises(srcjax.errors.JaxRuntimeError, match="CpuCallback error calling callback: KeyError"):
        srcjax.pure_callback(boom, srcjax.ShapeDtypeStruct((), np.float32), 1.0)
    with pytest.raises(KeyError):  # (the callback's own type too)
        srcjax.pure_callback(boom, srcjax.ShapeDtypeStruct((), np.float32), 1.0)
    assert issubclass(srcjax.errors.JaxRuntimeError, RuntimeError)

    @srcjax.jit
    def failing(a):
        srcjax.debug.callback(boom, a)
        return a

    with pytest.raises(srcjax.errors.JaxRuntimeError, match="KeyError") as caught:  # (JAX's, in a compiled program)
        failing(1.0)
    assert isinstance(caught.value, KeyError)
    with pytest.raises(KeyError) as caught:  # (eager: the callback's own exception, as JAX's)
        srcjax.debug.callback(boom, 1.0)
    assert not isinstance(caught.value, srcjax.errors.JaxRuntimeError)
    with pytest.raises(srcjax.errors.JaxRuntimeError, match="Incorrect output shape"):
        srcjax.pure_callback(lambda a: np.ones(3, np.float32), srcjax.ShapeDtypeStruct((), np.float32), 1.0)
