"""Benchmark support: BEIR datasets and ranking metrics (used by benchmarks/bench_retrieval.py)."""
