"""Benchmarks (retrieval quality and latency); run as scripts, never as tests."""
