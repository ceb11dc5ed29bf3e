"""``srcjax.scipy.signal``'s spectral analysis: ``detrend``, the windowed FFT (``stft``) and its inverse
(``istft``), and Welch's averaged periodograms (``welch``, ``csd``), with JAX's defaults and conventions.

A signal is cut into segments of ``nperseg`` samples, ``nperseg - noverlap`` apart; each is detrended,
windowed and transformed. ``stft`` keeps every segment's spectrum, scaled by 1 / sum(window); ``csd``
averages conj(X) Y over the segments, scaled to a density (1 / (fs sum(window^2))) or a spectrum
(1 / sum(window)^2), the one-sided positive frequencies doubled. ``istft`` inverts ``stft`` by weighted
overlap-add, dividing by the overlapped squared window.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Callable, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.numpy import fft as jnp_fft
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.numpy._core import check_arraylike, promote_dtypes_complex, promote_dtypes_inexact

__all__ = ["csd", "detrend", "istft", "stft", "welch"]


def _axis(axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def detrend(data: Any, axis: int = -1, type: str = "linear", bp: int | Sequence[int] | np.ndarray = 0,  # noqa: A002
            overwrite_data: None = None) -> Any:
    """``data`` less its mean ('constant') or less its least-squares line ('linear'), fitted piecewise
    between the breakpoints ``bp`` along ``axis``."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    (data,) = promote_dtypes_inexact(jnp.asarray(data))
    if type == "constant":
        return data - data.mean(axis, keepdims=True)
    n = data.shape[axis]
    breakpoints = np.unique(np.r_[0, bp, n])  # (sorted)
    if breakpoints[0] < 0 or breakpoints[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along given axis.")
    moved = jnp.moveaxis(data, axis, 0)
    columns = moved.reshape(n, -1)
    for start, stop in zip(breakpoints[:-1], breakpoints[1:]):
        points = stop - start
        design = jnp.vstack([jnp.ones(points, dtype=columns.dtype),
                             jnp.arange(1, points + 1, dtype=columns.dtype) / np.asarray(points, columns.dtype)]).T
        coefficients = jnp_linalg.lstsq(design, columns[start:stop])[0]
        fit = jnp.matmul(design, coefficients, precision=lax.Precision.HIGHEST)
        columns = columns.at[start:stop].add(-fit)
    return jnp.moveaxis(columns.reshape(moved.shape), 0, axis)


# -- windows and segments -------------------------------------------------------------------------------------
def _hann(n: int) -> Any:
    """The periodic Hann window sin^2(pi k / n) (SciPy's get_window('hann', n)); [1] for n = 1."""
    return jnp.array([1.0]) if n == 1 else jnp.sin(jnp.linspace(0, np.pi, n, endpoint=False)) ** 2


def _named_window(window: str | tuple, n: int) -> Any:
    if isinstance(window, str) and window == "hann":
        return _hann(n)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return get_window(window, n)


def _window_and_length(window: Any, nperseg: int | None, input_length: int, dtype: Any) -> tuple[Any, int]:
    """The window as an array of ``dtype`` and the segment length: a named window has nperseg samples (the
    whole input by default, and at most that); an array window sets the length itself."""
    if isinstance(window, (str, tuple)):
        length = input_length if nperseg is None else int(nperseg)
        if length > input_length:
            warnings.warn(f"nperseg={length} is greater than input_length={input_length}, using "
                          f"nperseg={input_length}", stacklevel=3)
            length = input_length
        return jnp.array(_named_window(window, length), dtype=dtype), length
    win = jnp.asarray(window, dtype=dtype)
    length = win.size if nperseg is None else int(nperseg)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if input_length < win.size:
        raise ValueError("window is longer than input signal")
    if length != win.size:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, length


def _segment_spectra(x: Any, win: Any, detrend_func: Callable[[Any], Any], nperseg: int, noverlap: int,
                     nfft: int, sides: str) -> Any:
    """The spectra (..., segments, frequencies) of the detrended, windowed segments of x (..., samples)."""
    step = nperseg - noverlap
    starts = np.arange(0, x.shape[-1] - nperseg + 1, step)
    segments = x[..., starts[:, None] + np.arange(nperseg)[None, :]]
    segments = detrend_func(segments)
    if jnp.iscomplexobj(win):
        (segments,) = promote_dtypes_complex(segments)
    segments = win * segments
    if sides == "twosided":
        return jnp_fft.fft(segments, n=nfft)
    return jnp_fft.rfft(jnp.real(segments), n=nfft)


def _padded(x: Any, n: int, mode: str, **kwargs: Any) -> Any:
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **kwargs)


def _odd_extension(x: Any, n: int) -> Any:
    """x extended by n samples at each end by point reflection about the end samples: 2 x[0] - x[n:0:-1]."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, which is "
                         f"{x.shape[-1] - 1}.")
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], axis=-1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -(n + 1):-1], axis=-1)
    return jnp.concatenate((left, x, right), axis=-1)


_BOUNDARIES: dict[Any, Callable[[Any, int], Any]] = {
    "even": lambda x, n: _padded(x, n, "reflect"),
    "odd": _odd_extension,
    "constant": lambda x, n: _padded(x, n, "edge"),
    "zeros": lambda x, n: _padded(x, n, "constant", constant_values=0.0),
    None: lambda x, n: x,
}


def _detrend_function(detrend_type: Any, axis: int) -> Callable[[Any], Any]:
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, type=detrend_type, axis=-1)
    if callable(detrend_type):
        # As JAX's: the segments are (..., segments, samples) here, but a callable detrend is given them with
        # the signal's original axis moved last (for the last axis, the segment axis). So is JAX's.
        return lambda d: jnp.moveaxis(detrend_type(jnp.moveaxis(d, axis, -1)), -1, axis)
    if not detrend_type:
        return lambda d: d
    raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _zero_padded_to(x: Any, length: int) -> Any:
    return jnp.concatenate((x, jnp.zeros((*x.shape[:-1], length - x.shape[-1]), x.dtype)), axis=-1)


def _spectral_helper(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
                     noverlap: int | None = None, nfft: int | None = None, detrend_type: Any = "constant",
                     return_onesided: bool = True, scaling: str = "density", axis: int = -1, mode: str = "psd",
                     boundary: str | None = None, padded: bool = False) -> tuple[Any, Any, Any]:
    """(frequencies, segment times, per-segment spectra with frequencies at ``axis`` and segments last):
    X for mode 'stft', conj(X) X for 'psd' with one signal, conj(X) Y with two."""
    if mode not in ("psd", "stft"):
        raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES)}")
    axis = _axis(axis, np.ndim(x))
    if y is None:
        check_arraylike("spectral_helper", x)
        (x,) = promote_dtypes_inexact(x)
        outer_shape = x.shape[:axis] + x.shape[axis + 1:]
    else:
        if mode != "psd":
            raise ValueError("two-argument mode is available only when mode=='psd'")
        check_arraylike("spectral_helper", x, y)
        x, y = promote_dtypes_inexact(x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outer_shape = jnp.broadcast_shapes(x.shape[:axis] + x.shape[axis + 1:], y.shape[:axis] + y.shape[axis + 1:])
        except ValueError as err:
            raise ValueError("x and y cannot be broadcast together.") from err
    result_dtype = dtypes.to_complex_dtype(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _window_and_length(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if x.size == 0 or (y is not None and y.size == 0):
        # (with two signals JAX's shape holds the axis number at place min(lengths): kept, so shapes are JAX's)
        place = None if y is None else min(x.shape[axis], y.shape[axis])
        shape = x.shape if y is None else outer_shape[:place] + (axis,) + outer_shape[place:]
        return jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype), jnp.zeros(shape, result_dtype)
    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        if y.ndim > 1:
            y = jnp.moveaxis(y, axis, -1)
        length = max(x.shape[-1], y.shape[-1])  # the shorter signal is zero-padded
        x, y = (v if v.shape[-1] == length else _zero_padded_to(v, length) for v in (x, y))
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    signals = [x] if y is None else [x, y]
    signals = [_BOUNDARIES[boundary](s, nperseg // 2) for s in signals]
    if padded:  # zeros to make the last segment whole
        extra = (-(signals[0].shape[-1] - nperseg) % step) % nperseg
        signals = [_zero_padded_to(s, s.shape[-1] + extra) for s in signals]
    detrend_func = _detrend_function(detrend_type, axis)
    if scaling == "density":
        scale = 1.0 / (fs * (win * win).sum())
    elif scaling == "spectrum":
        scale = 1.0 / win.sum() ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    (scale,) = promote_dtypes_complex(scale)
    sides = "onesided" if return_onesided else "twosided"
    if return_onesided and any(jnp.iscomplexobj(s) for s in signals):
        sides = "twosided"
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    frequency_function = jnp_fft.fftfreq if sides == "twosided" else jnp_fft.rfftfreq
    freqs = frequency_function(nfft, 1 / fs, dtype=freq_dtype)
    spectra = [_segment_spectra(s, win, detrend_func, nperseg, noverlap, nfft, sides) for s in signals]
    if y is not None:
        result = jnp.conjugate(spectra[0]) * spectra[1]
    elif mode == "psd":
        result = jnp.conjugate(spectra[0]) * spectra[0]
    else:
        result = spectra[0]
    result = result * scale
    if sides == "onesided" and mode == "psd":  # the negative frequencies' power, folded onto the positive ones
        result = result.at[..., 1:None if nfft % 2 else -1].mul(2)
    length = signals[0].shape[-1]
    time = jnp.arange(nperseg / 2, length - nperseg / 2 + 1, step, dtype=freq_dtype) / fs
    if boundary is not None:
        time = time - (nperseg / 2) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = jnp.real(result)
    return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend: Any = False, return_onesided: bool = True,
         boundary: str | None = "zeros", padded: bool = True, axis: int = -1) -> tuple[Any, Any, Any]:
    """(f, t, Zxx): the short-time Fourier transform, frequencies at ``axis`` and segment times last."""
    return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                            scaling="spectrum", axis=axis, mode="stft", boundary=boundary, padded=padded)


def _median_bias(n: int) -> Any:
    """The median of n periodograms over their mean (Allen et al., FINDCHIRP, appendix B)."""
    even = jnp.arange(2.0, n, 2)
    return 1 + jnp.sum(1.0 / (even + 1) - 1.0 / even)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """(f, Pxy): the cross power spectral density of x and y by Welch's method (y None: x's own, real)."""
    freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
                                     axis, mode="psd")
    if y is not None:
        pxy = pxy + 0j  # complex, even where y is x
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                bias = _median_bias(pxy.shape[-1]).astype(pxy.dtype)
                if jnp.iscomplexobj(pxy):
                    pxy = jnp.median(jnp.real(pxy), axis=-1) + 1j * jnp.median(jnp.imag(pxy), axis=-1)
                else:
                    pxy = jnp.median(pxy, axis=-1)
                pxy = pxy / bias
            elif average == "mean":
                pxy = pxy.mean(axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = jnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None, noverlap: int | None = None,
          nfft: int | None = None, detrend: Any = "constant", return_onesided: bool = True,
          scaling: str = "density", axis: int = -1, average: str = "mean") -> tuple[Any, Any]:
    """(f, Pxx): the power spectral density of x by Welch's method."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap, nfft=nfft, detrend=detrend,
                     return_onesided=return_onesided, scaling=scaling, axis=axis, average=average)
    return freqs, jnp.real(pxx)


def _overlap_and_add(frames: Any, step: int) -> Any:
    """sum_f frames[..., f, :] placed at offset f step: (..., frames, length) -> (..., step (frames-1) + length).
    Each frame is cut into chunks of ``step`` samples; chunk c of every frame lands at block f + c, so the
    c-th chunks of all frames form one contiguous run, shifted by c blocks."""
    *batch, count, length = frames.shape
    chunks = math.ceil(length / step)
    frames = jnp.pad(frames, [(0, 0)] * (len(batch) + 1) + [(0, chunks * step - length)])
    frames = frames.reshape((*batch, count, chunks, step))
    out = 0
    for c in range(chunks):
        run = frames[..., c, :].reshape((*batch, count * step))
        out = out + jnp.pad(run, [(0, 0)] * len(batch) + [(c * step, (chunks - 1 - c) * step)])
    return out[..., :step * (count - 1) + length]


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,  # noqa: N803 - SciPy's name
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True, boundary: bool = True,
          time_axis: int = -1, freq_axis: int = -2) -> tuple[Any, Any]:
    """(t, x): the signal whose ``stft`` is ``Zxx``, by windowed overlap-add."""
    check_arraylike("istft", Zxx)
    spectra = jnp.asarray(Zxx)
    if spectra.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis, time_axis = _axis(freq_axis, spectra.ndim), _axis(time_axis, spectra.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    spectra = jnp.asarray(spectra, dtype=dtypes.to_complex_dtype(spectra.dtype))
    n_default = 2 * (spectra.shape[freq_axis] - 1) if input_onesided else spectra.shape[freq_axis]
    nperseg_int = int(nperseg or n_default)
    if nperseg_int < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft_int = n_default + 1 if input_onesided and nperseg_int == n_default + 1 else n_default  # odd nperseg
    else:
        nfft_int = int(nfft)
    if nfft_int < nperseg_int:
        raise ValueError(f"FFT length ({nfft_int}) must be longer than nperseg ({nperseg_int}).")
    noverlap_int = int(noverlap or nperseg_int // 2)  # (0 too means the default, as in JAX)
    if noverlap_int >= nperseg_int:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg_int - noverlap_int
    if time_axis != spectra.ndim - 1 or freq_axis != spectra.ndim - 2:
        outer = tuple(a for a in range(spectra.ndim) if a not in (time_axis, freq_axis))
        spectra = jnp.transpose(spectra, outer + (freq_axis, time_axis))
    inverse = jnp_fft.irfft if input_onesided else jnp_fft.ifft
    segments = inverse(spectra, axis=-2, n=nfft)[..., :nperseg_int, :]  # (JAX passes the nfft given, not nfft_int)
    if isinstance(window, (str, tuple)):
        win = jnp.asarray(_named_window(window, nperseg_int), dtype=segments.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg_int:
            raise ValueError(f"window must have length of {nperseg_int}")
    segments = segments * win.sum()  # undoes stft's 'spectrum' scaling
    win = lax.expand_dims(win, (*range(segments.ndim - 2), -1))
    x = _overlap_and_add(jnp.swapaxes(segments * win, -2, -1), step)
    norm = _overlap_and_add(jnp.swapaxes(jnp.repeat(win * win, segments.shape[-1], axis=-1), -2, -1), step)
    if boundary:
        x = x[..., nperseg_int // 2:-(nperseg_int // 2)]
        norm = norm[..., nperseg_int // 2:-(nperseg_int // 2)]
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if x.ndim > 1 and time_axis != spectra.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs  # (x.shape[0], as JAX's)
    return time, x
