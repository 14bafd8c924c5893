"""Run: the worker process that imports torch, its inputs, its probes, and the pool that drives it."""
