"""``srcjax.scipy``: the parts of SciPy's API that JAX offers, written over srcjax.numpy and lax."""
