"""``srcjax.scipy.stats``."""

from srcjax.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom, gumbel_l,
    gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm, pareto, poisson, t,
    truncnorm, uniform, vonmises, wrapcauchy,
)
from srcjax.runtime.scipy.stats._core import ModeResult, mode, rankdata, sem  # noqa: F401, E402
from srcjax.runtime.scipy.stats.kde import gaussian_kde  # noqa: F401, E402
