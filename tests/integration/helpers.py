"""Small async helpers for talking to a live server (they live with the harness)."""

from server.bench.harness import say, until_final, utterance, wait_for

__all__ = ["say", "until_final", "utterance", "wait_for"]
