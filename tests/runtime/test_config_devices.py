"""config.update, devices and device_put / device_get."""

import os
import subprocess
import sys

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.config import config

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")


@pytest.fixture
def restore_config():
    saved = dict(config._values)
    yield
    config._values.update(saved)


def test_defaults():
    assert config.jax_enable_x64 is False
    assert config.jax_threefry_partitionable is False
    assert config.read("jax_disable_jit") is False


def test_integer_settings_from_the_environment(monkeypatch):
    """SRCJAX_* integers: unset or empty is the default; junk or a value too small names the variable."""
    from srcjax.codegen.settings import environ_int

    monkeypatch.delenv("SRCJAX_TEST_SETTING", raising=False)
    assert environ_int("SRCJAX_TEST_SETTING", 7) == 7
    monkeypatch.setenv("SRCJAX_TEST_SETTING", " ")
    assert environ_int("SRCJAX_TEST_SETTING", 7) == 7
    monkeypatch.setenv("SRCJAX_TEST_SETTING", "12")
    assert environ_int("SRCJAX_TEST_SETTING", 7) == 12
    monkeypatch.setenv("SRCJAX_TEST_SETTING", "1e3")
    with pytest.raises(ValueError, match="SRCJAX_TEST_SETTING='1e3' is not an integer"):
        environ_int("SRCJAX_TEST_SETTING", 7)
    monkeypatch.setenv("SRCJAX_TEST_SETTING", "0")
    with pytest.raises(ValueError, match="SRCJAX_TEST_SETTING='0': expected at least 1"):
        environ_int("SRCJAX_TEST_SETTING", 7, least=1)


def test_option_context_managers(restore_config):
    """jax.enable_x64, jax.debug_nans, ... as JAX exports them: ``with`` them (or as decorators) the option holds
    the value, then its old one; boolean options default to True; others need a value, checked as JAX does."""
    with srcjax.enable_x64():
        assert jnp.ones(2).dtype == np.float64 and srcjax.enable_x64.value is True
    assert jnp.ones(2).dtype == np.float32 and config.jax_enable_x64 is False

    @srcjax.debug_nans(True)
    def checked(x):
        return srcjax.jit(jnp.log)(x)

    with pytest.raises(FloatingPointError, match="nan"):
        checked(np.float32(-1))
    assert np.isnan(srcjax.jit(jnp.log)(np.float32(-1)))
    with srcjax.default_matmul_precision("float32"):
        assert config.jax_default_matmul_precision == "float32"
        with srcjax.default_matmul_precision("highest"):
            assert config.jax_default_matmul_precision == "highest"
        assert config.jax_default_matmul_precision == "float32"
    assert config.jax_default_matmul_precision is None
    with pytest.raises(TypeError, match="requires an argument"):
        srcjax.default_matmul_precision()
    with pytest.raises(ValueError, match="jax_default_matmul_precision: the value must be None or one of"):
        srcjax.default_matmul_precision("fastest")
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion: the value must be one of"):
        srcjax.config.update("jax_numpy_rank_promotion", "loud")
    with pytest.raises(KeyError), srcjax.threefry_partitionable(True):  # (restored when the block raises)
        assert config.jax_threefry_partitionable is True
        raise KeyError("out")
    assert config.jax_threefry_partitionable is False


def test_compiled_code_follows_the_options_traces_read(restore_config):
    """A jitted function called with the same arguments under other option values (x64, rank promotion, the
    random bits' stream) runs the program those values give, as JAX keys its caches on them."""
    f = srcjax.jit(lambda x: x.astype(float) + jnp.arange(2))
    x = jnp.ones(2, np.float32)
    outside = f(x)
    with srcjax.enable_x64():
        inside = f(x)
    assert (outside.dtype, inside.dtype, f(x).dtype) == (np.float32, np.float64, np.float32)
    add = srcjax.jit(lambda a, b: a + b)
    m, v = jnp.ones((2, 3)), jnp.ones(3)
    add(m, v)
    with srcjax.numpy_rank_promotion("raise"), pytest.raises(ValueError, match="rank_promotion"):
        add(m, v)
    bits = srcjax.jit(lambda key: srcjax.random.bits(key, (3,)))
    key = srcjax.random.PRNGKey(0)
    before = np.asarray(bits(key))
    with srcjax.threefry_partitionable(True):
        partitionable = np.asarray(bits(key))
    np.testing.assert_array_equal(np.asarray(bits(key)), before)
    # (JAX 0.10.2's bits for PRNGKey(0), both ways)
    assert partitionable.tolist() == [4070199207, 4202968722, 1427181096]
    assert before.tolist() == [4146024105, 1351547692, 2718843009]


def test_prng_implementations(restore_config):
    with pytest.raises(NotImplementedError, match="threefry2x32 keys only"):
        srcjax.config.update("jax_default_prng_impl", "rbg")
    with pytest.raises(ValueError, match="jax_default_prng_impl: the value must be one of"):
        srcjax.default_prng_impl("philox")
    with srcjax.default_prng_impl("threefry2x32"):
        assert config.jax_default_prng_impl == "threefry2x32"


def test_update_and_unknown_names(restore_config):
    srcjax.config.update("jax_debug_nans", True)
    assert config.jax_debug_nans is True
    with pytest.raises(AttributeError, match="unknown config option 'jax_no_such_flag'"):
        srcjax.config.update("jax_no_such_flag", 1)
    with pytest.raises(AttributeError, match="config.update"):
        config.jax_enable_x64 = True


def test_x64_widens_defaults(restore_config):
    assert jnp.asarray(1.0).dtype == np.float32
    assert jnp.asarray(np.arange(3)).dtype == np.int32
    srcjax.config.update("jax_enable_x64", True)
    assert jnp.asarray(1.0).dtype == np.float64
    assert jnp.asarray(np.arange(3)).dtype == np.int64
    assert srcjax.device_put(np.ones(2)).dtype == np.float64


def test_virtual_cpu_devices(restore_config):
    assert len(srcjax.devices()) == 1
    srcjax.config.update("jax_num_cpu_devices", 4)
    devs = srcjax.devices()
    assert [d.id for d in devs] == [0, 1, 2, 3] and all(d.platform == "cpu" for d in devs)
    assert srcjax.device_count() == 4
    x = srcjax.device_put(np.ones(3), devs[2])
    assert x.device == devs[2] and x.committed
    with pytest.raises(ValueError, match="at least 1"):
        srcjax.config.update("jax_num_cpu_devices", 0)


def test_debug_nans(restore_config):
    srcjax.config.update("jax_debug_nans", True)
    with pytest.raises(FloatingPointError, match="nan"):
        jnp.log(jnp.asarray(-1.0))


def test_debug_infs_eager_and_compiled(restore_config):
    """``jax_debug_infs``: an infinity in a result is an error, eagerly and in a jitted call (which the
    interpreter then runs, op by op, as for ``jax_debug_nans``); finite results pass."""
    srcjax.config.update("jax_debug_infs", True)
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in log"):
        jnp.log(jnp.asarray(0.0))
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
        srcjax.jit(lambda x: 1.0 / x)(np.float32(0.0))
    assert float(srcjax.jit(jnp.log)(np.float32(1.0))) == 0.0


def test_device_put_get_pytrees():
    tree = {"a": np.ones(2), "b": (np.zeros(1, np.int64), 3.0)}
    put = srcjax.device_put(tree)
    assert isinstance(put["a"], srcjax.Array) and put["a"].dtype == np.float32
    assert put["b"][0].dtype == np.int32
    back = srcjax.device_get(put)
    assert isinstance(back["a"], np.ndarray)
    with pytest.raises(TypeError, match="Device"):
        srcjax.device_put(np.ones(2), "gpu:0")


def test_device_put_inside_transformed_functions():
    """Inside jit, grad and vmap ``device_put`` keeps a traced value where it is, as in JAX (it had refused it as
    an escaped tracer); its device argument is still checked."""

    def f(x):
        y = srcjax.device_put(x * 2)
        return srcjax.device_put(y, srcjax.devices()[0]) + 1

    x = np.arange(3.0, dtype=np.float32)
    np.testing.assert_array_equal(srcjax.jit(f)(x), [1, 3, 5])
    np.testing.assert_array_equal(srcjax.grad(lambda x: f(x).sum())(x), [2, 2, 2])
    np.testing.assert_array_equal(srcjax.vmap(f)(np.ones((2, 3), np.float32)), np.full((2, 3), 3))
    with pytest.raises(TypeError, match="Device"):
        srcjax.jit(lambda x: srcjax.device_put(x, "gpu:0"))(x)


def test_xla_flags_set_the_number_of_cpu_devices():
    """JAX's tutorials ask for virtual CPU devices with XLA's flag in XLA_FLAGS, set before the first computation
    (import included); jax_num_cpu_devices, where it is set, wins."""
    script = ("import os\nimport srcjax\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
              "print(srcjax.device_count(), len(srcjax.local_devices()))\n"
              "srcjax.config.update('jax_num_cpu_devices', 2)\nprint(srcjax.device_count())")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env={
        k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")})
    assert run.returncode == 0 and run.stdout.split() == ["4", "4", "2"], run.stderr


def test_device_put_with_a_named_sharding(four_devices):
    """device_put onto a NamedSharding lays the array out as it says (shards, replication), after JAX's checks:
    the mesh's axis names, the spec's rank and even division (JAX's IndivisibleError, a ValueError)."""
    mesh = srcjax.sharding.Mesh(np.array(srcjax.devices()[:4]).reshape(2, 2), ("a", "b"))
    named = lambda *spec: srcjax.sharding.NamedSharding(mesh, srcjax.sharding.PartitionSpec(*spec))  # noqa: E731
    x = srcjax.device_put(np.arange(24.0).reshape(4, 6), named("a", "b"))
    assert x.sharding == named("a", "b") and not x.is_fully_replicated and len(x.devices()) == 4
    shards = {s.device.id: s.index for s in x.addressable_shards}
    assert shards[1] == (slice(0, 2), slice(3, 6)) and shards[2] == (slice(2, 4), slice(0, 3))
    np.testing.assert_array_equal(x + 1, np.arange(24.0).reshape(4, 6) + 1)
    assert srcjax.device_put(np.ones(3), named()).is_fully_replicated
    with pytest.raises(ValueError, match="partitioned 2 times, but the dimension size is 3"):
        srcjax.device_put(np.ones(3), named("a"))
    with pytest.raises(ValueError, match="only valid for values of rank at least 3"):
        srcjax.device_put(np.ones(4), named("a", "b", None))
    with pytest.raises(ValueError, match="Resource axis: c of"):
        srcjax.device_put(np.ones(4), named("c"))
    assert jnp.asarray(np.ones(2), device=srcjax.devices()[1]).devices() == {srcjax.devices()[1]}
    assert jnp.array([1.0, 2.0], device=srcjax.devices()[2]).devices() == {srcjax.devices()[2]}
    y = srcjax.jit(lambda v: (v * 2).to_device(srcjax.devices()[0]) + jnp.asarray(v, device=srcjax.devices()[0]))(
        np.ones(2, np.float32))
    np.testing.assert_array_equal(y, [3, 3])
    # jit's out_shardings: one for every result, or a pytree prefix of them (None: any layout)
    placed = srcjax.jit(lambda v: (v * 2, {"a": v + 1, "b": v.sum()}),
                        out_shardings=(named("a"), {"a": named(None, "b"), "b": None}))(np.ones((4, 4)))
    assert placed[0].sharding == named("a") and placed[1]["a"].sharding == named(None, "b")
    np.testing.assert_array_equal(placed[1]["b"], 16)
    assert all(r.sharding == named("a") for r in srcjax.jit(lambda v: (v, v), out_shardings=named("a"))(np.ones(4)))


def test_block_until_ready_on_pytree():
    tree = [jnp.ones(2), (jnp.zeros(3),)]
    assert srcjax.block_until_ready(tree) is tree


def test_device_class_default_device_and_transfer_guards(restore_config, four_devices):
    """``jax.Device`` covers the devices ``devices()`` lists; ``default_device`` (a context manager and the
    ``jax_default_device`` option) moves where unplaced arrays live; the transfer guards take JAX's levels (and
    allow every transfer: CPU devices share the host's memory), refusing others as JAX does."""
    devices = srcjax.devices()
    assert all(isinstance(d, srcjax.Device) for d in devices) and not isinstance("cpu", srcjax.Device)
    with srcjax.default_device(devices[2]):
        assert srcjax.numpy.ones(2).devices() == {devices[2]}
    assert jnp.ones(2).devices() == {devices[0]}
    with srcjax.default_device("cpu"):
        assert jnp.ones(2).devices() == {devices[0]}
    with pytest.raises(ValueError, match="jax.default_device must be passed"):
        srcjax.default_device("bogus")
    with srcjax.transfer_guard("disallow"):
        assert config.jax_transfer_guard == "disallow" and config.jax_transfer_guard_host_to_device == "disallow"
        assert float(jnp.asarray(1.0) + 1) == 2.0
    assert config.jax_transfer_guard is None
    with srcjax.transfer_guard_device_to_host("log"):
        assert config.jax_transfer_guard_device_to_host == "log"
    with pytest.raises(ValueError, match="new enum value must be None or in"):
        srcjax.transfer_guard("bogus")
    with pytest.raises(TypeError):
        srcjax.transfer_guard_host_to_device()


def test_make_array_from_callback_and_live_arrays(four_devices):
    devices = srcjax.devices()
    data = np.arange(24).reshape(4, 6)
    seen = []

    def part(index):
        seen.append(index)
        return data[index]

    mesh = srcjax.make_mesh((2, 2), ("x", "y"))
    sharding = srcjax.NamedSharding(mesh, srcjax.P("x", None))
    out = srcjax.make_array_from_callback((4, 6), sharding, part)
    np.testing.assert_array_equal(np.asarray(out), data)
    assert out.dtype == np.int32 and out.sharding == sharding
    assert sorted((s[0].start, s[0].stop) for s in seen) == [(0, 2), (2, 4)]  # (one call per distinct part)
    assert [np.asarray(s.data).shape for s in out.addressable_shards] == [(2, 6)] * 4
    single = srcjax.make_array_from_callback((2,), srcjax.sharding.SingleDeviceSharding(devices[1]),
                                             lambda index: np.ones(2, np.float32))
    assert single.devices() == {devices[1]}
    with pytest.raises(ValueError, match="must match the dtype"):
        srcjax.make_array_from_callback((4, 6), sharding, part, dtype=np.float32)
    with pytest.raises(ValueError, match="shape"):
        srcjax.make_array_from_callback((4, 6), sharding, lambda index: np.ones(3))
    assert repr(srcjax.P("x", None)) == "P('x', None)"
    # (JAX 0.10.2's reprs, recorded)
    assert repr(mesh) == "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))"
    assert repr(sharding) == "NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit)), " \
        "spec=P('x', None), memory_kind=device)"
    assert repr(single.sharding) == "SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device)"
    assert single.sharding.memory_kind == sharding.memory_kind == "device"
    with pytest.raises(ValueError, match="axis_types"):
        srcjax.sharding.Mesh(np.array(devices[:2]), ("x",), axis_types=(srcjax.sharding.AxisType.Auto,) * 2)
    live = srcjax.live_arrays()
    assert any(a is out for a in live) and any(a is single for a in live)
