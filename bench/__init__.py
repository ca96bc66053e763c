"""Benchmarks of durable-tools against a bare hand-written Temporal workflow.

Run `python -m bench` (or `make bench`); `--quick` for a short version. Every figure is
measured side by side in one run, against one dev server, so ratios stay meaningful on a
shared machine.
"""
