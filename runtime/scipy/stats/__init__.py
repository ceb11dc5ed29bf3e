"""``srcjax.scipy.stats``: probability distributions under SciPy's names (``stats.norm.pdf``, ...)."""

from srcjax.runtime.scipy.stats import (
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom, gumbel_l,
    gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm, pareto, poisson, t,
    truncnorm, uniform, vonmises, wrapcauchy,
)
from srcjax.runtime.scipy.stats._core import ModeResult, mode, rankdata, sem
from srcjax.runtime.scipy.stats.kde import gaussian_kde

__all__ = [
    "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "gennorm",
    "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "multinomial", "multivariate_normal", "nbinom",
    "norm", "pareto", "poisson", "t", "truncnorm", "uniform", "vonmises", "wrapcauchy", "ModeResult", "mode",
    "rankdata", "sem", "gaussian_kde",
]
