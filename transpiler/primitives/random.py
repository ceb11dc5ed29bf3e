"""Primitives of the 'random' family (being written)."""

from transpiler.primitives.core import register_module

register_module(globals())
