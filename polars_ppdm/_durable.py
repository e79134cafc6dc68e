"""Durable renames: after ``os.replace`` / ``os.link`` the new name survives a crash only
once its folder is fsync-ed (POSIX).  Shared by the secret files and the pipeline's
atomic outputs."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["fsync_folder"]


def fsync_folder(folder: Path) -> None:
    """Make the names in ``folder`` durable; a no-op where folders cannot be opened."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
