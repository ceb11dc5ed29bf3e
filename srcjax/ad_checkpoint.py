"""``srcjax.ad_checkpoint`` (``jax.ad_checkpoint``): ``checkpoint``, the names its policies save values by, and
what reverse mode saves (``saved_residuals``, ``print_saved_residuals``)."""

from srcjax.runtime.autodiff import checkpoint, checkpoint_name, checkpoint_policies  # noqa: F401
from srcjax.runtime.residuals import print_saved_residuals, saved_residuals  # noqa: F401

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals", "saved_residuals"]
