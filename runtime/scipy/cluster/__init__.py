"""``srcjax.scipy.cluster``: vector quantisation (``vq``), JAX's subset of SciPy's clustering."""
