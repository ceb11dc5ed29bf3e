"""``srcjax.image`` (``jax.image``): resizing and resampling images."""

from srcjax.runtime.image import ResizeMethod, resize, scale_and_translate  # noqa: F401
