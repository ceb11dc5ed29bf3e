"""Buffers and strided views of them: what reshapes, transposes, broadcasts, slices and reversals of a
materialised value read, and how BLAS reads a stack of matrices.

A ``View`` says where element ``i`` of a value lives: ``offset + sum(i[k] * strides[k])`` elements into the
buffer of its ``base`` (a stride of 0 repeats an axis, a negative one reverses it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from srcjax.transpiler.ir import Value


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Buffer:
    """Memory the entry function sees: an input, a constant, an output or a temporary (``index`` within kind)."""

    kind: str
    index: int
    dtype: np.dtype
    size: int


@dataclass(frozen=True)
class View:
    base: Value  # the root whose buffer this reads
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0


def merged(view: View, axes: tuple[int, ...]) -> tuple[int, int] | None:
    """(size, stride) of ``axes`` of ``view`` read as one axis, or None if they are not one strided line."""
    size = int(np.prod([view.shape[a] for a in axes], dtype=np.int64))
    live = [(view.shape[a], view.strides[a]) for a in axes if view.shape[a] != 1]
    for (_, s1), (d2, s2) in zip(live, live[1:]):
        if s1 != s2 * d2:
            return None
    return size, (live[-1][1] if live else 0)


def blas_layout(rows: int, cols: int, row_stride: int, col_stride: int) -> tuple[bool, int] | None:
    """(transposed, leading dimension) under which BLAS reads a rows x cols matrix with these strides in
    row-major order, or None. Strides of axes of size 1 do not matter."""
    ld = row_stride if rows > 1 else max(cols, 1)
    if (col_stride == 1 or cols == 1) and ld >= max(cols, 1):
        return False, ld
    ld = col_stride if cols > 1 else max(rows, 1)
    if (row_stride == 1 or rows == 1) and ld >= max(rows, 1):
        return True, ld
    return None


def matrix_layout(view: View, batch, rows, cols) -> tuple[int, bool, int] | None:
    """(batch stride, transposed, leading dimension) of a view as a stack of matrices, or None."""
    parts = [merged(view, batch), merged(view, rows), merged(view, cols)]
    if None in parts:
        return None
    (_, batch_stride), (r, rs), (c, cs) = parts
    layout = blas_layout(r, c, rs, cs)
    return None if layout is None else (batch_stride, *layout)


def reshape_view(view: View, shape: tuple[int, ...]) -> View | None:
    """``view`` reshaped to ``shape`` (row-major order) without copying, or None if strides cannot say it."""
    if 0 in shape:
        return View(view.base, shape, contiguous_strides(shape), view.offset)
    old = [(d, s) for d, s in zip(view.shape, view.strides) if d != 1]
    new_strides = [0] * len(shape)
    new = [i for i, d in enumerate(shape) if d != 1]
    i = j = 0
    while i < len(old) or j < len(new):
        # the smallest run of old axes [i, i2) and new axes [j, j2) with equal products
        i2, j2 = i + 1, j + 1
        old_size, new_size = old[i][0], shape[new[j]]
        while old_size != new_size:
            if old_size < new_size:
                old_size *= old[i2][0]
                i2 += 1
            else:
                new_size *= shape[new[j2]]
                j2 += 1
        for a in range(i, i2 - 1):  # the old run must be one strided line
            if old[a][1] != old[a + 1][1] * old[a + 1][0]:
                return None
        step = old[i2 - 1][1]
        for b in reversed(range(j, j2)):
            new_strides[new[b]] = step
            step *= shape[new[b]]
        i, j = i2, j2
    return View(view.base, tuple(shape), tuple(new_strides), view.offset)
