"""Benchmarks (`allnighter bench ...`) and the Python viewer they and the tests use."""
