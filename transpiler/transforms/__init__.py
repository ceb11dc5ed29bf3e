"""IR -> IR transformations: forward mode (``jvp``), reverse mode (``vjp``), and, later, batching."""
