"""The real ptp4l pair lives with the benches (`allnighter bench clock` runs it too)."""

from server.bench.ptp4l import PTPPair, missing

__all__ = ["PTPPair", "missing"]
