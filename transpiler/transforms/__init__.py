"""IR -> IR transformations: forward mode (``jvp``), reverse mode (``vjp``) and batching (``vmap``). The engines
hold no per-primitive code: they look the rules up on the primitives (``transpiler/primitives/``)."""
