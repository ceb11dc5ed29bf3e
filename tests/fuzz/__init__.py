"""A differential fuzzer: random well-typed srcjax programs, run every way srcjax can run them, compared, shrunk."""
