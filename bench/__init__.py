"""Benchmarks: each module has main() printing ratios measured side by side in one run (never run as tests)."""
