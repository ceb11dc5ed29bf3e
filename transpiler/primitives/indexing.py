"""Primitives of the 'indexing' family (being written)."""

from transpiler.primitives.core import register_module

register_module(globals())
