"""Per-file analysis: parse, index functions and calls, infer tensor facts, run rules."""
