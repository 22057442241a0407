"""Dubbing beside the show: lines of several roles spoken on request, with their visemes."""
