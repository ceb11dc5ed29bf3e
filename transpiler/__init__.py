"""The compiler proper: the typed SSA IR, the primitives and their math, the front end and the transforms.

Nothing here owns arrays or runs code on devices; ``Primitive.bind`` hands work to whichever interpreter
the runtime (or the IR builder) has installed.
"""
