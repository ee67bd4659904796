"""Benchmarks: each prints ratios against named baselines measured in the same run."""
