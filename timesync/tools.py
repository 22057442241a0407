"""Finding the system tools the clock sources and their fixtures run (pmc, ptp4l, chronyd)."""

from __future__ import annotations

import shutil


def which(tool: str) -> str | None:
    """The tool's path, or None. linuxptp and chrony install into /usr/sbin, which a non-root
    PATH often leaves out, so that is searched too."""
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
