"""``srcjax.scipy.spatial``: rotations (``transform``), JAX's subset of SciPy's spatial algorithms."""
