"""srcjax.experimental.sparse (BCOO) against NumPy float64 references built from the stored (index, value)
pairs, and layouts (nse, index order, padding) recorded from JAX 0.10.2."""

import numpy as np
import pytest

import srcjax
from srcjax.experimental import sparse
from srcjax.runtime import numpy as jnp


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def dense_of(data, indices, shape, n_batch=0):
    """The dense array a BCOO layout stands for: each stored block added at its index, out-of-bounds dropped."""
    data, indices = np.asarray(data, np.float64), np.asarray(indices)
    out = np.zeros(shape)
    batch = shape[:n_batch]
    for b in np.ndindex(*batch):
        db = data[tuple(min(i, s - 1) for i, s in zip(b, data.shape))]
        ib = indices[tuple(min(i, s - 1) for i, s in zip(b, indices.shape))]
        for e in range(ib.shape[0]):
            idx = tuple(ib[e])
            if all(0 <= i < s for i, s in zip(idx, shape[n_batch:])):
                out[b + idx] += db[e]
    return out


def matrix(rng, shape, density=0.4):
    m = rng.normal(size=shape).astype(np.float32)
    m[rng.random(shape) >= density] = 0
    return m


def test_fromdense_layouts_match_jax_and_round_trip(rng):
    m = np.array([[0., 2., 0.], [1., 0., 4.]], np.float32)
    a = sparse.BCOO.fromdense(m)
    assert repr(a) == "BCOO(float32[2, 3], nse=3)"  # JAX 0.10.2's docstring example
    np.testing.assert_array_equal(a.data, [2., 1., 4.])
    np.testing.assert_array_equal(a.indices, [[0, 1], [1, 0], [1, 2]])
    assert a.indices.dtype == np.int32 and a.indices_sorted and a.unique_indices
    padded = sparse.BCOO.fromdense(m, nse=5)  # JAX pads with zeros at the sparse shape
    np.testing.assert_array_equal(padded.indices[3:], [[2, 3], [2, 3]])
    np.testing.assert_array_equal(padded.data[3:], [0., 0.])
    m3 = matrix(rng, (3, 4, 5))
    for n_batch, n_dense in [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0)]:
        b = sparse.BCOO.fromdense(m3, n_batch=n_batch, n_dense=n_dense)
        assert (b.n_batch, b.n_dense, b.n_sparse) == (n_batch, n_dense, 3 - n_batch - n_dense)
        np.testing.assert_array_equal(b.todense(), m3)
        np.testing.assert_array_equal(sparse.todense(b), m3)
    nb = sparse.BCOO.fromdense(np.array([[1., 0, 2], [0, 0, 3]], np.float32), n_batch=1)
    assert nb.nse == 2  # the most any batch holds
    np.testing.assert_array_equal(nb.indices[..., 0], [[0, 2], [2, 3]])


def test_sum_duplicates_sorts_sums_and_pads_as_jax():
    data = np.array([1., 2., 3., 0., 5.], np.float32)
    indices = np.array([[1, 2], [0, 0], [1, 2], [2, 1], [3, 0]])
    a = sparse.BCOO((data, indices), shape=(3, 3))
    np.testing.assert_array_equal(a.todense(), dense_of(data, indices, (3, 3)))
    # JAX 0.10.2: zeros and the out-of-bounds [3, 0] removed, [0, 0] before [1, 2]
    s = a.sum_duplicates()
    np.testing.assert_array_equal(s.indices, [[0, 0], [1, 2]])
    np.testing.assert_array_equal(s.data, [2., 4.])
    kept = a.sum_duplicates(remove_zeros=False)
    np.testing.assert_array_equal(kept.indices, [[0, 0], [1, 2], [2, 1]])
    np.testing.assert_array_equal(kept.data, [2., 4., 0.])
    wide = a.sum_duplicates(nse=6)
    np.testing.assert_array_equal(wide.indices, [[0, 0], [1, 2], [3, 3], [3, 3], [3, 3], [3, 3]])
    srt = a.sort_indices()
    np.testing.assert_array_equal(srt.indices, [[0, 0], [1, 2], [1, 2], [2, 1], [3, 0]])
    np.testing.assert_array_equal(srt.data, [2., 1., 3., 0., 5.])
    assert srt.indices_sorted and not srt.unique_indices


def test_products_transpose_sums_and_reshape_match_dense(rng):
    m = matrix(rng, (4, 5))
    a = sparse.BCOO.fromdense(m)
    x, X = rng.normal(size=5).astype(np.float32), rng.normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(a @ x, m.astype(np.float64) @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a @ X, m.astype(np.float64) @ X, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jnp.asarray(X.T) @ a.T, X.T @ m.T.astype(np.float64), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.T.todense(), m.T)
    np.testing.assert_allclose((a * 2).todense(), 2 * m)
    np.testing.assert_allclose((a * jnp.asarray(X.T[0, :5])).todense(), m * X.T[0, :5], rtol=1e-6)
    np.testing.assert_allclose(sparse.bcoo_multiply_dense(a, jnp.asarray(m)), (m * m)[m != 0], rtol=1e-6)
    np.testing.assert_allclose(a.sum(0).todense(), m.sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.sum(), m.sum(), rtol=1e-5)
    np.testing.assert_allclose(a.reshape(20).todense(), m.reshape(20))
    np.testing.assert_allclose((-a).todense(), -m)
    m3 = matrix(rng, (3, 4, 5))
    b = sparse.BCOO.fromdense(m3, n_batch=1)
    V = rng.normal(size=(3, 5, 2)).astype(np.float32)
    batched = sparse.bcoo_dot_general(b, V, dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    np.testing.assert_allclose(batched, np.einsum("bij,bjk->bik", m3, V), rtol=1e-5, atol=1e-5)
    contracted = sparse.bcoo_dot_general(b, V, dimension_numbers=(((0, 2), (0, 1)), ((), ())))
    np.testing.assert_allclose(contracted, np.einsum("bij,bjk->ik", m3, V), rtol=1e-5, atol=1e-5)
    for axis in range(3):
        np.testing.assert_allclose(b.sum(axis).todense(), m3.sum(axis), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sparse.bcoo_transpose(b, permutation=(0, 2, 1)).todense(), m3.transpose(0, 2, 1))
    np.testing.assert_allclose(b.reshape(3, 20).todense(), m3.reshape(3, 20))


def test_constructors_match_jax():
    e = sparse.eye(3, 4, 1)
    np.testing.assert_array_equal(e.todense(), np.eye(3, 4, 1))
    np.testing.assert_array_equal(e.indices, [[0, 1], [1, 2], [2, 3]])
    eb = sparse.eye(3, 4, -1, n_batch=1)  # JAX 0.10.2: one element per row, the missed row at column 4
    np.testing.assert_array_equal(eb.indices[:, :, 0], [[4], [0], [1]])
    np.testing.assert_array_equal(eb.data[:, 0], [0., 1., 1.])
    assert sparse.eye(3, 4, 5).nse == 0
    z = sparse.empty((3, 4), nse=2)
    np.testing.assert_array_equal(z.indices, [[3, 4], [3, 4]])
    np.testing.assert_array_equal(z.todense(), np.zeros((3, 4)))
    with _partitionable():
        r = sparse.random_bcoo(srcjax.random.PRNGKey(1), (4, 5), dtype=np.float32)
    # JAX 0.10.2 (its default jax_threefry_partitionable=True)
    np.testing.assert_array_equal(r.indices, [[2, 1], [0, 3], [3, 3], [2, 0]])
    np.testing.assert_allclose(r.data, [0.70261526, 0.23483467, 0.81786454, 0.17094111], rtol=1e-6)


class _partitionable:
    def __enter__(self):
        self.old = srcjax.config.jax_threefry_partitionable
        srcjax.config.update("jax_threefry_partitionable", True)

    def __exit__(self, *exc):
        srcjax.config.update("jax_threefry_partitionable", self.old)


def test_errors_match_jax(rng):
    a = sparse.BCOO.fromdense(matrix(rng, (4, 5)), nse=6)
    with pytest.raises(ValueError, match="Invalid data.shape"):
        sparse.BCOO((a.data, a.indices), shape=(4, 5, 2))
    with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
        a @ np.ones(4, np.float32)
    b = sparse.BCOO.fromdense(matrix(rng, (3, 4, 5)), n_batch=1)
    with pytest.raises(NotImplementedError, match="cannot permute batch axes"):
        b.transpose((1, 0, 2))
    with pytest.raises(Exception, match="nse"):
        srcjax.jit(lambda m: m.sum_duplicates().data)(a)
    with pytest.raises(ValueError, match="must correspond to a batch dimension"):  # (JAX's words)
        srcjax.vmap(lambda s: s.todense())(a)  # n_batch=0: axis 0 of the leaves is the nse axis
    with pytest.raises(ValueError, match="must correspond to a batch dimension"):
        srcjax.vmap(lambda s: s.todense(), in_axes=1)(b)
    with pytest.raises(NotImplementedError, match="output shape is larger than Y.shape"):
        a + jnp.ones(5)
    np.testing.assert_allclose(a + jnp.ones((4, 5)), np.asarray(a.todense()) + 1)  # JAX: dense


def test_jit_grad_and_vmap(rng):
    m = matrix(rng, (4, 5))
    a = sparse.BCOO.fromdense(m)
    x = rng.normal(size=5).astype(np.float32)
    w = rng.normal(size=(4, 5)).astype(np.float32)

    def loss(data, v):
        s = sparse.BCOO((data, a.indices), shape=(4, 5))
        return jnp.sum(jnp.sin(s @ v)) + jnp.sum(s.T.todense() * w.T) + (s * 2.0).sum()

    @srcjax.jit
    def both(data, v):
        return loss(data, v), srcjax.grad(loss)(data, v), sparse.BCOO.fromdense(jnp.asarray(m), nse=7).indices

    value, grad, indices = both(a.data, x)
    rows, cols = np.asarray(a.indices).T
    md = m.astype(np.float64)
    np.testing.assert_allclose(value, np.sin(md @ x).sum() + (md * w).sum() + 2 * md.sum(), rtol=1e-5)
    # d/d data[e] = cos(Mx)[row] x[col] + w[row, col] + 2
    np.testing.assert_allclose(grad, np.cos(md @ x)[rows] * x[cols] + w[rows, cols] + 2, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(indices, sparse.BCOO.fromdense(m, nse=7).indices)
    m3 = matrix(rng, (3, 4, 5))
    b = sparse.BCOO.fromdense(m3, n_batch=1)
    # vmap over a BCOO maps its first batch axis: each example is a 2-D BCOO (JAX's vmappable rule)
    def example(s, v):
        if s.shape != (4, 5) or s.n_batch != 0:  # (not `assert`: pytest rewrites those, hiding the source)
            raise ValueError(f"vmap's example is {s!r}")
        return s @ v

    out = srcjax.vmap(example, in_axes=(0, None))(b, x)
    np.testing.assert_allclose(out, np.einsum("bij,j->bi", m3, x), rtol=1e-5, atol=1e-6)
    doubled = srcjax.vmap(lambda s: s * 2.0)(b)
    assert doubled.shape == (3, 4, 5) and doubled.n_batch == 1
    np.testing.assert_allclose(doubled.todense(), 2 * m3)


def test_sparsify_runs_dense_code_on_bcoo(rng):
    m = matrix(rng, (4, 5))
    a = sparse.BCOO.fromdense(jnp.asarray(m))
    v = rng.normal(size=4).astype(np.float32)
    md = m.astype(np.float64)
    # JAX 0.10.2's docstring example, and results that stay sparse
    np.testing.assert_allclose(sparse.sparsify(lambda M, v: 2 * M.T @ v)(a, v), 2 * md.T @ v, rtol=1e-5, atol=1e-6)
    out = sparse.sparsify(lambda M: jnp.sin(M) * 2.0 + M)(a)
    assert isinstance(out, sparse.BCOO) and out.nse == a.nse  # (one structure throughout: JAX adds the data)
    np.testing.assert_allclose(out.todense(), 2 * np.sin(md) + md, rtol=1e-6, atol=1e-6)
    summed = sparse.sparsify(lambda M: (M / 2.0).sum(0))(a)
    np.testing.assert_allclose(summed.todense(), md.sum(0) / 2, rtol=1e-5, atol=1e-6)
    assert float(sparse.sparsify(jnp.sum)(a)) == pytest.approx(md.sum(), rel=1e-5)
    with pytest.raises(NotImplementedError, match="sparse rule for exp is not implemented because it would result"):
        sparse.sparsify(jnp.exp)(a)
    np.testing.assert_allclose(sparse.sparsify(lambda M: jnp.exp(sparse.todense(M)))(a), np.exp(md), rtol=1e-6)
    # control flow over a sparse value runs eagerly; compiled, it is refused by name
    looped = sparse.sparsify(lambda M: srcjax.lax.fori_loop(0, 3, lambda i, M: M * 2.0, M))(a)
    np.testing.assert_allclose(looped.todense(), 8 * md, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="'cond' passing sparse values into or out of its regions"):
        srcjax.jit(sparse.sparsify(lambda M, p: srcjax.lax.cond(p, lambda M: M * 2.0, lambda M: -M, M)))(a, True)
    # compiled, a loop may read a sparse matrix from outside (JAX's sparse logistic-regression pattern)
    square = sparse.BCOO.fromdense(jnp.asarray(matrix(rng, (4, 4))))
    powered = srcjax.jit(sparse.sparsify(lambda M, v: srcjax.lax.fori_loop(0, 3, lambda i, v: M @ v, v)))(square, v)
    sq = np.asarray(square.todense(), np.float64)
    np.testing.assert_allclose(powered, sq @ sq @ sq @ v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((a ** 2).todense(), md ** 2, rtol=1e-6)
    kept = a.sum(0, keepdims=True)
    assert kept.shape == (1, 5) and kept.n_batch == 1  # JAX 0.10.2's layout
    np.testing.assert_allclose(kept.todense(), md.sum(0, keepdims=True), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="Subtraction between sparse and dense array"):
        1 - a


def test_indexing_slicing_and_sparse_products(rng):
    m3 = matrix(rng, (3, 4, 5))
    for n_batch in (0, 1):
        b = sparse.BCOO.fromdense(m3, n_batch=n_batch)
        for index in [0, -1, (slice(1, 3),), (slice(None), 2), (0, 1), (0, 1, 2), (Ellipsis, slice(1, None))]:
            np.testing.assert_array_equal(np.asarray(b[index].todense() if b[index].shape else b[index].data.sum()),
                                          m3[index])
    with pytest.raises(IndexError, match="out of bounds"):
        sparse.BCOO.fromdense(m3)[3]
    np.testing.assert_array_equal(sparse.BCOO.fromdense(m3)[::2, 1:].todense(), m3[::2, 1:])
    taken = sparse.BCOO.fromdense(m3)[jnp.array([2, -3, 7])]  # JAX: negative wrap, past-the-end clamps
    assert taken.n_batch == 1 and taken.shape == (3, 4, 5)
    np.testing.assert_array_equal(taken.todense(), m3[[2, 0, 2]])
    row = sparse.BCOO.fromdense(m3)[1]  # JAX 0.10.2 keeps every stored element, zeroed and moved to the padding
    assert row.nse == sparse.BCOO.fromdense(m3).nse and row.shape == (4, 5)
    left, right = matrix(rng, (3, 4)), matrix(rng, (4, 2))
    product = sparse.BCOO.fromdense(left) @ sparse.BCOO.fromdense(right)
    assert isinstance(product, sparse.BCOO) and product.nse == 6  # min(nse * nse, 3 * 2), JAX's bound
    np.testing.assert_allclose(product.todense(), left.astype(np.float64) @ right, rtol=1e-5, atol=1e-6)


def test_bcsr_layout_matches_jax_and_products(rng):
    m = np.array([[0., 1., 0.], [2., 0., 3.], [0., 0., 0.], [4., 0., 0.]], np.float32)
    c = sparse.BCSR.fromdense(m)
    assert repr(c) == "BCSR(float32[4, 3], nse=4)"
    np.testing.assert_array_equal(c.indices, [1, 0, 2, 0])
    np.testing.assert_array_equal(c.indptr, [0, 1, 3, 3, 4])
    np.testing.assert_array_equal(c.todense(), m)
    np.testing.assert_array_equal(c.to_bcoo().indices, sparse.BCOO.fromdense(m).indices)
    v = rng.normal(size=3).astype(np.float32)
    np.testing.assert_allclose(c @ v, m.astype(np.float64) @ v, rtol=1e-6)
    m3 = matrix(rng, (3, 4, 5))
    batched = sparse.BCSR.fromdense(m3, n_batch=1)
    w = rng.normal(size=5).astype(np.float32)
    np.testing.assert_allclose(srcjax.vmap(lambda s: s @ w)(batched), m3.astype(np.float64) @ w, rtol=1e-5, atol=1e-6)
    summed = sparse.BCSR((np.array([1., 2., 3.], np.float32), np.array([1, 0, 1]), np.array([0, 2, 3])),
                         shape=(2, 3)).sum_duplicates()
    np.testing.assert_array_equal(summed.indptr, [0, 2, 3])  # JAX 0.10.2: each row's columns sorted
    np.testing.assert_array_equal(summed.indices, [0, 1, 1])


def test_extract_takes_values_at_the_indices():
    indices = np.array([[1, 2], [0, 0], [1, 2], [3, 0]])
    a = sparse.BCOO((np.ones(4, np.float32), indices), shape=(3, 3))
    dense = np.arange(9, dtype=np.float32).reshape(3, 3)
    # JAX 0.10.2: a duplicate gets 0 (its first occurrence the value), out of bounds 0
    np.testing.assert_array_equal(sparse.bcoo_extract(a, jnp.asarray(dense)).data, [5., 0., 0., 0.])
    np.testing.assert_array_equal(sparse.bcoo_extract(a, jnp.asarray(dense), assume_unique=True).data, [5., 0., 5., 0.])
    with pytest.raises(ValueError, match="shape mismatch"):
        sparse.bcoo_extract(a, jnp.ones((3, 4)))


def test_update_layout_round_trips_and_refuses_inefficiency(rng):
    m3 = matrix(rng, (2, 3, 4))
    a = sparse.BCOO.fromdense(m3, n_batch=1, n_dense=1)
    flat = a.update_layout(n_batch=0, n_dense=0)
    assert (flat.n_batch, flat.n_dense, flat.nse) == (0, 0, a.nse * 2 * 4)  # JAX 0.10.2: every block split
    np.testing.assert_array_equal(flat.todense(), m3)
    with pytest.raises(sparse.SparseEfficiencyError, match="increasing n_batch from 0 to 2"):
        flat.update_layout(n_batch=2)
    back = flat.update_layout(n_batch=2, n_dense=1, on_inefficient=None)
    assert back.n_batch == 2 and back.n_dense == 1
    np.testing.assert_array_equal(back.todense(), m3)
    other = matrix(rng, (2, 3, 4))
    pair = [sparse.BCOO.fromdense(x, n_batch=1) for x in (m3, other)]
    along_batch = sparse.bcoo_concatenate(pair, dimension=0)  # JAX: the nse evened out to the larger
    assert along_batch.nse == max(p.nse for p in pair) and along_batch.shape == (4, 3, 4)
    np.testing.assert_array_equal(along_batch.todense(), np.concatenate([m3, other], 0))
    along_sparse = sparse.bcoo_concatenate(pair, dimension=2)
    assert along_sparse.nse == sum(p.nse for p in pair)
    np.testing.assert_array_equal(along_sparse.todense(), np.concatenate([m3, other], 2))
    stacked = sparse.sparsify(lambda m: jnp.broadcast_to(m, (2, 3, 4)))(sparse.BCOO.fromdense(m3[0]))
    assert stacked.n_batch == 1 and stacked.nse == sparse.BCOO.fromdense(m3[0]).nse  # JAX: a new batch axis
    np.testing.assert_array_equal(stacked.todense(), np.broadcast_to(m3[0], (2, 3, 4)))


def test_sparse_grad_is_sparse_in_the_pattern():
    x = sparse.BCOO.fromdense(jnp.arange(6.0))
    y = jnp.ones(6)
    value, g = sparse.value_and_grad(lambda X, y: X @ y)(x, y)  # JAX 0.10.2's docstring example
    assert float(value) == 15.0 and repr(g) == "BCOO(float32[6], nse=5)"
    np.testing.assert_array_equal(g.indices, x.indices)
    np.testing.assert_array_equal(g.data, np.ones(5))
    gx, gy = sparse.grad(lambda X, y: jnp.sum(jnp.sin(X @ y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx.data, np.cos(15.0) * np.ones(5), rtol=1e-5)
    np.testing.assert_allclose(gy, np.cos(15.0) * np.arange(6.0), rtol=1e-5, atol=1e-6)


def test_float64_layouts_match_jax(x64):
    m = np.array([[0., 1.5], [2.25, 0.]])
    a = sparse.BCOO.fromdense(m)
    assert (a.data.dtype, a.indices.dtype, (a @ np.ones(2)).dtype) == (np.float64, np.int32, np.float64)
    assert sparse.eye(2).data.dtype == np.float64
    with _partitionable():
        r = sparse.random_bcoo(srcjax.random.PRNGKey(2), (3, 4), nse=3)
    # JAX 0.10.2 with x64: default float64 data and int64 indices
    assert (r.data.dtype, r.indices.dtype) == (np.float64, np.int64)
    np.testing.assert_array_equal(r.indices, [[2, 3], [1, 3], [2, 2]])
    np.testing.assert_allclose(r.data, [0.38997887511613416, 0.16926067289001878, 0.7983594243084233], rtol=1e-15)
