"""``srcjax.test_util``: ``check_grads`` and the finite-difference checks behind it."""

from srcjax.runtime.test_util import *  # noqa: F401,F403
