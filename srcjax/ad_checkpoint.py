"""``srcjax.ad_checkpoint`` (``jax.ad_checkpoint``): ``checkpoint`` and the names its policies save values by."""

from srcjax.runtime.autodiff import checkpoint, checkpoint_name, checkpoint_policies  # noqa: F401

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies"]
