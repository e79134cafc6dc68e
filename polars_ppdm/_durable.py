"""Durable renames: after ``os.replace`` / ``os.link`` the new name survives a crash only
once its folder is fsync-ed (POSIX).  Shared by the secret files, the ledger and the
pipeline's atomic outputs, with :func:`file_kind`, the words for what is not a regular
file (a path a run would write, or a ledger, that is a FIFO or a device is refused)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["file_kind", "fsync_folder"]


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words, for a refusal.

    Examples
    --------
    >>> file_kind(os.stat("/dev/null").st_mode)
    'a character device'
    """
    for test, kind in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


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
