"""``srcjax.experimental.ode`` (``jax.experimental.ode``): ``odeint``."""

from srcjax.runtime.ode import odeint  # noqa: F401
