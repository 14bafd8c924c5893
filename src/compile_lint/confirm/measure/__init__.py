"""Measure: eager-vs-compiled timing, the profiler trace and graph coverage."""
