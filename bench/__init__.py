"""Benchmarks: scripts that print numbers and write them to bench/results/."""
