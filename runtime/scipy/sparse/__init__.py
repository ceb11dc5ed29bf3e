"""``srcjax.scipy.sparse``: its ``linalg`` (JAX's Krylov solvers)."""
