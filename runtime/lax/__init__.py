"""``srcjax.lax``: the primitives under lax's names, with lax's signatures, plus control flow."""

from srcjax.runtime.lax import linalg  # noqa: F401 - ``lax.linalg``
from srcjax.runtime.lax.collectives import *  # noqa: F401,F403
from srcjax.runtime.lax.control import *  # noqa: F401,F403
from srcjax.runtime.lax.convolution import *  # noqa: F401,F403
from srcjax.runtime.lax.elementwise import *  # noqa: F401,F403
from srcjax.runtime.lax.fourier import *  # noqa: F401,F403
from srcjax.runtime.lax.indexing import *  # noqa: F401,F403
from srcjax.runtime.lax.linear_solve import *  # noqa: F401,F403
from srcjax.runtime.lax.ragged import *  # noqa: F401,F403
from srcjax.runtime.lax.reduce import *  # noqa: F401,F403
from srcjax.runtime.lax.rng import *  # noqa: F401,F403
from srcjax.runtime.lax.shape import *  # noqa: F401,F403
from srcjax.runtime.lax.tokens import *  # noqa: F401,F403
from srcjax.runtime.lax.threefry import threefry2x32  # noqa: F401 - srcjax's own: see threefry.py
