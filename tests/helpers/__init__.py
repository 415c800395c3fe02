"""Helpers shared by tests and benchmarks (import as ``helpers.<module>``)."""
