"""``jax.debug.inspect_array_sharding`` and ``visualize_array_sharding`` / ``visualize_sharding``: an array's layout
handed to a callback, or drawn as a table of which devices hold which block.

``inspect_array_sharding`` calls back as early as the layout is known: at once on an Array (its ``sharding``), and
inside a compiled or transformed function when the function is traced (once per compiled signature, as JAX's
happens at compile time): with the layout a ``reshard`` or ``shard_map`` there gave the value, as JAX's compiler
reports it, and otherwise ``SingleDeviceSharding`` of the default device: srcjax does not carry layouts through
computations (README, "differences"), so such a traced value is one array on the default device.

``visualize_sharding`` draws JAX's table, one cell per block of a 1-D or 2-D array with the ids of the devices that
hold it, each block sized in proportion to its part of the array. With ``rich`` importable it is drawn by ``rich``
as JAX draws it (in colour where the terminal and matplotlib's ``tab20b`` allow); without ``rich`` (JAX then
raises) the table rich draws without colour is printed as plain text: the same box-drawing lines, cell sizes,
wrapped labels and ellipses, laid out here by rich's rules for fitting a table into ``max_width``.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.runtime import tree_util


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
    """Call ``callback`` with the sharding of each array leaf of ``value``."""
    from srcjax.runtime.array import Array
    from srcjax.runtime.devices import SingleDeviceSharding, default_device
    from srcjax.runtime.eager import to_array
    from srcjax.runtime.mesh_context import traced_layout
    from srcjax.transpiler.ir import Value

    def inspect(leaf: Any) -> None:
        if isinstance(leaf, Value):
            layout = traced_layout(leaf)
            callback(SingleDeviceSharding(default_device()) if layout is None else _compiled(layout))
        else:
            callback((leaf if isinstance(leaf, Array) else to_array(leaf, "inspect_array_sharding")).sharding)

    tree_util.tree_map(inspect, value)


def _compiled(layout: Any) -> Any:
    """A traced value's layout as JAX's compiler reports it: over the mesh with every axis ``Auto``, the spec
    without its trailing unsplit axes."""
    from srcjax.runtime.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

    spec = list(layout.spec)
    while spec and spec[-1] is None:
        spec.pop()
    mesh = layout.mesh
    return NamedSharding(Mesh(mesh.devices, mesh.axis_names, (AxisType.Auto,) * len(mesh.axis_names)),
                         PartitionSpec(*spec), memory_kind=layout.memory_kind)


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """Draw the layout of ``arr`` (as ``visualize_sharding(arr.shape, arr.sharding, **kwargs)``)."""
    inspect_array_sharding(arr, callback=lambda sharding: visualize_sharding(np.shape(arr), sharding, **kwargs))


def visualize_sharding(shape: Sequence[int], sharding: Any, *, use_color: bool = True, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map: Any = None) -> None:
    """Draw which devices hold which block of an array of ``shape`` (1-D or 2-D) laid out as ``sharding``."""
    shape = tuple(int(n) for n in shape)
    if not 1 <= len(shape) <= 2:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    grid = _grid(shape, sharding, scale, min_width, max_width)
    if have_rich():
        _rich_table(grid, use_color, color_map, max_width)
    else:
        print(_text_table(grid, max_width))


def have_rich() -> bool:
    return importlib.util.find_spec("rich") is not None


def _grid(shape: tuple[int, ...], sharding: Any, scale: float, min_width: int, max_width: int) -> list[list[tuple]]:
    """Rows of cells ``(label, (top, right, bottom, left) padding)`` by JAX's geometry: a block's height is its
    share of the rows times ``10 * scale`` lines, its width its share of the columns times the array's aspect ratio
    times 2.5 characters a line, clipped to ``[min_width, max_width]``; a 1-D array is one row of one line."""
    kind = next(iter(sharding.device_set)).platform.upper()
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    owners: dict[tuple[int, int], set[int]] = {}
    sizes: dict[tuple[int, int], tuple[float | None, float]] = {}
    for device, index in sharding.devices_indices_map(shape).items():
        spans = [range(*s.indices(n)) for s, n in zip(index, shape)]
        blocks = tuple(span.start // len(span) if len(span) else 0 for span in spans)
        if len(shape) == 1:
            blocks, height = (0, *blocks), None
        else:
            height = len(spans[0]) / shape[0]
        owners.setdefault(blocks, set()).add(device.id)
        sizes[blocks] = (height, len(spans[-1]) / shape[-1])
    rows = max(r for r, _ in owners) + 1
    cols = max(c for _, c in owners) + 1
    grid = []
    for r in range(rows):
        row = []
        for c in range(cols):
            label = f"{kind} " + ",".join(str(i) for i in sorted(owners[r, c]))
            height_share, width_share = sizes[r, c]
            width = min(max(int(width_share * base_width * 2.5), min_width), max_width)
            height = 1 if height_share is None else int(height_share * base_height)
            left, extra = divmod(width - len(label) - 2, 2)
            top, below = divmod(height - 2, 2)
            row.append((label, (top, left + extra, top + below, left)))  # (negative: clamped when drawn)
        grid.append(row)
    return grid


def _text_table(grid: list[list[tuple]], max_width: int) -> str:
    """The grid as text in rich's square box (every cell framed), laid out by rich's rules: a column is as wide as
    its widest padded label; when the columns do not fit in ``max_width`` the widest give way first (evenly) down
    to the next widest; a label that no longer fits is wrapped at its space, a word too long cut with an ellipsis."""
    grid = [[(label, tuple(max(p, 0) for p in pad)) for label, pad in row] for row in grid]
    columns = list(zip(*grid))
    budget = max_width - (len(columns) + 1)  # (less the vertical lines)
    widths = [max(_wanted(label, pad, budget) for label, pad in column) for column in columns]
    if sum(widths) > budget:
        widths = [max(_wanted(label, pad, room) for label, pad in column)
                  for column, room in zip(columns, _fitted(widths, budget))]
    lines = ["┌" + "┬".join("─" * w for w in widths) + "┐"]
    for r, row in enumerate(grid):
        cells = [_cell(label, pad, width) for (label, pad), width in zip(row, widths)]
        height = max(1, *(len(cell) for cell in cells))
        cells = [cell + [" " * width] * (height - len(cell)) for cell, width in zip(cells, widths)]
        lines += ["│" + "│".join(parts) + "│" for parts in zip(*cells)]
        lines.append(("├" + "┼".join("─" * w for w in widths) + "┤") if r + 1 < len(grid) else
                     ("└" + "┴".join("─" * w for w in widths) + "┘"))
    return "\n".join(lines)


def _wanted(label: str, pad: tuple[int, int, int, int], room: int) -> int:
    """How wide a padded label asks to be within ``room`` (all of it when the side padding alone fills it)."""
    sides = pad[1] + pad[3]
    return room if room - sides < 1 else min(len(label) + sides, room)


def _fitted(widths: list[int], budget: int) -> list[int]:
    """Column widths brought within ``budget``: the widest columns shrink toward the next widest, the excess shared
    among them in column order (each taking its rounded share of what is left)."""
    widths = list(widths)
    while sum(widths) > budget:
        excess, widest = sum(widths) - budget, max(widths)
        step = min(excess, widest - max((w for w in widths if w != widest), default=0))
        sharing = widths.count(widest)
        for i, w in enumerate(widths):
            if w == widest:
                cut = min(step, round(excess / sharing))
                widths[i], excess, sharing = w - cut, excess - cut, sharing - 1
    return widths


def _cell(label: str, pad: tuple[int, int, int, int], width: int) -> list[str]:
    """A cell's lines: ``top`` blank lines, the label centred in what the side padding leaves (or wrapped to it,
    left-aligned), then ``bottom`` blank lines."""
    top, right, bottom, left = pad
    inner = width - left - right
    if inner < 1:  # (the side padding leaves no room: rich draws no label line)
        body = []
    elif len(label) <= inner:
        gap = inner - len(label)
        body = [" " * (gap // 2) + label + " " * (gap - gap // 2)]
    else:
        body = [_cut(line, inner) for line in _wrapped(label, inner)]
    return [" " * width] * top + [(" " * left + line + " " * right)[:width].ljust(width) for line in body] + \
        [" " * width] * bottom


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` broken before the words that would overflow a line of ``width`` (a word keeps its trailing space)."""
    lines, line = [], ""
    for word in re.findall(r"\s*\S+\s*", text):
        if line and len(line) + len(word.rstrip()) > width:
            lines.append(line)
            line = ""
        line += word
    return lines + [line]


def _cut(line: str, width: int) -> str:
    """``line`` in exactly ``width`` characters: its trailing space dropped where too long, then cut with an
    ellipsis, or padded on the right."""
    if len(line) > width:
        line = line[:max(width, len(line.rstrip()))]
    if len(line) > width:
        line = line[:width - 1] + "…" if width else ""
    return line.ljust(width)


def _rich_table(grid: list[list[tuple]], use_color: bool, color_map: Any, max_width: int) -> None:
    """The grid drawn by rich, as JAX draws it: coloured blocks without lines, or framed cells without colour."""
    import rich.align
    import rich.box
    import rich.console
    import rich.padding
    import rich.style
    import rich.table

    console = rich.console.Console(width=max_width)
    use_color = use_color and console.color_system is not None
    if use_color and not color_map:
        try:
            import matplotlib

            color_map = matplotlib.colormaps["tab20b"]
        except ModuleNotFoundError:
            use_color = False
    colors = _colors(color_map, len(grid), len(grid[0])) if use_color else None
    table = rich.table.Table(show_header=False, show_lines=not use_color, padding=0, highlight=not use_color,
                             pad_edge=False, box=None if use_color else rich.box.SQUARE)
    for row in grid:
        cells = []
        for label, (top, right, bottom, left) in row:
            background = foreground = None
            if colors is not None:
                background = next(colors)
                foreground = _text_color(background)
                top, right, bottom, left = top + 1, right + 1, bottom + 1, left + 1
            cells.append(rich.padding.Padding(rich.align.Align(label, "center", vertical="middle"),
                                              (max(top, 0), max(right, 0), max(bottom, 0), max(left, 0)),
                                              style=rich.style.Style(bgcolor=background, color=foreground)))
        table.add_row(*cells)
    console.print(table, end="\n\n")


def _colors(color_map: Callable, rows: int, cols: int):
    """The colour map sampled at evenly spaced points, visited by JAX's stride so that neighbours differ."""
    count = rows * cols
    points = np.linspace(0, 1, count)
    i = 0
    for _ in range(count):
        color = color_map(points[i])
        if not isinstance(color, str):
            red, green, blue = (int(a * 255) for a in color[:3])
            color = f"#{red:02X}{green:02X}{blue:02X}"
        yield color
        i = (i + count // 2 + (count % 2 == 0)) % count


def _text_color(background: str) -> str:
    """Black on light backgrounds, white on dark (by the background's luma)."""
    red, green, blue = (int(background[i:i + 2], 16) for i in (1, 3, 5))
    return "#000000" if red * 0.299 + green * 0.587 + blue * 0.114 > 186 else "#ffffff"
