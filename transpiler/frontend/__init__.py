"""The front end: reads a Python function's source with libcst and interprets it into the typed SSA IR."""

from srcjax.transpiler.frontend.calls import trace_function  # noqa: F401
from srcjax.transpiler.frontend.errors import TranspileError  # noqa: F401
