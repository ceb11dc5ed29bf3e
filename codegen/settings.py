"""Integer settings read from the environment (``SRCJAX_PARALLEL_MIN_WORK`` and the like), for every layer."""

from __future__ import annotations

import os


def environ_int(name: str, default: int, least: int = 0) -> int:
    """The integer the environment variable ``name`` holds (``default`` when it is unset or empty); anything
    else, or a value under ``least``, is an error that names the variable."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r} is not an integer") from None
    if value < least:
        raise ValueError(f"environment variable {name}={text!r}: expected at least {least}")
    return value
