"""``srcjax.lax``: the primitives under lax's names, with lax's signatures, plus control flow."""

from runtime.lax import linalg  # noqa: F401 - ``lax.linalg``
from runtime.lax.collectives import *  # noqa: F401,F403
from runtime.lax.control import *  # noqa: F401,F403
from runtime.lax.convolution import *  # noqa: F401,F403
from runtime.lax.elementwise import *  # noqa: F401,F403
from runtime.lax.fourier import *  # noqa: F401,F403
from runtime.lax.indexing import *  # noqa: F401,F403
from runtime.lax.reduce import *  # noqa: F401,F403
from runtime.lax.shape import *  # noqa: F401,F403
