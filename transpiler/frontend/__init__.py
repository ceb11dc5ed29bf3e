"""The front end: reads a Python function's source with libcst and interprets it into the typed SSA IR."""

from transpiler.frontend.calls import trace_function  # noqa: F401
from transpiler.frontend.errors import TranspileError  # noqa: F401
