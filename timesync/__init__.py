"""Time for the show: the clock every timestamp that leaves the process is stamped on."""
