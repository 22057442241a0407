"""What the host and tools drive: the HTTP API (say, interrupt, offers, health, metrics) and
the host desk's own endpoints for the panel."""
