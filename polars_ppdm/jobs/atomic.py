"""Atomic output files: written under a temporary name in the target's folder, fsync-ed,
then renamed over the target (:func:`os.replace`), and the folder fsync-ed.

A reader, or a run killed at any point, sees the previous file or the new one whole,
never a part of one under the final name.  A killed run leaves its temporary file
(``.NAME.ppdm-PID-XXXXXXXX.tmp``) behind; the next write to the same target removes
those whose process is gone.

(:mod:`polars_ppdm.secret_files` writes secret files the same way, with mode 0600 and
without ever replacing an existing file.)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from polars_ppdm._durable import fsync_folder

__all__ = [
    "GrowingFileHash",
    "atomic_path",
    "file_sha256",
    "remove_stale",
    "replace_whole",
    "write_bytes_atomic",
]

_CHUNK = 1 << 20


def _temporary_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.ppdm-{os.getpid()}-{secrets.token_hex(4)}.tmp")


def remove_stale(target: Path) -> list[Path]:
    """Remove temporary files of ``target`` left by processes that no longer run."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.ppdm-(\d+)-[0-9a-f]{{8}}\.tmp")
    removed: list[Path] = []
    folder = target.parent
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        match = pattern.fullmatch(entry.name)
        if match and not _alive(int(match[1])):
            with contextlib.suppress(OSError):
                entry.unlink()
                removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def file_sha256(path: Path, *, sync: bool = False) -> str:
    """The SHA-256 of a file, read in 1 MiB chunks (flat memory); ``sync``: fsync it too."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
        if sync:
            os.fsync(file.fileno())
    return digest.hexdigest()


class GrowingFileHash:
    """The SHA-256 of a file computed while another writer is still writing it.

    A thread reads ``path`` behind the writer (from the page cache, overlapping the
    hashing with the write) and :meth:`finish`, called once the writer has closed the
    file, reads the rest and returns the digest.  It is the digest of the finished file
    only for a writer that appends and never rewrites a byte it wrote: Polars' Parquet
    and CSV sinks write that way (the Parquet footer goes last), and the tests compare
    every recorded digest with the file's.

    Examples
    --------
    >>> import hashlib, tempfile
    >>> path = Path(tempfile.mkdtemp()) / "out.bin"
    >>> follow = GrowingFileHash(path)
    >>> with open(path, "wb") as file:
    ...     _ = file.write(b"x" * 3_000_000)
    >>> follow.finish() == hashlib.sha256(b"x" * 3_000_000).hexdigest()
    True
    """

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._digest = hashlib.sha256()
        self._written = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._follow, name="ppdm-hash", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            while not self._path.exists():
                if self._written.wait(0.01) and not self._path.exists():
                    msg = f"{str(self._path)!r} was never written"
                    raise FileNotFoundError(msg)
            with open(self._path, "rb") as file:
                while True:
                    done = self._written.is_set()  # read before the chunk: no byte missed
                    chunk = file.read(_CHUNK)
                    if chunk:
                        self._digest.update(chunk)
                    elif done:
                        return
                    else:
                        time.sleep(0.02)
        except BaseException as error:
            self._error = error

    def finish(self) -> str:
        """The digest, once the writer has closed the file."""
        self._written.set()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._digest.hexdigest()

    def abandon(self) -> None:
        """Stop following (the write failed); nothing is raised."""
        self._written.set()
        self._thread.join()


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; when the block ends without an
    error the file is fsync-ed and renamed to ``target``, otherwise removed.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as temporary:
    ...     _ = temporary.write_text("new")
    ...     target.exists()
    False
    >>> target.read_text()
    'new'
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    temporary = _temporary_name(target)
    try:
        yield temporary
        with open(temporary, "rb") as file:
            os.fsync(file.fileno())
        replace_whole(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


# What a table Spark wrote holds: its part files, Hadoop's markers and checksums.
_TABLE_FOLDER_ENTRY = re.compile(r"(part-.*|_SUCCESS|_committed_.*|_started_.*|\..*\.crc)")


def check_replaceable_folder(target: Path) -> None:
    """Refuse to replace a folder that is not a table a run wrote (Spark's part files):
    an output path that names a user's folder must never delete what is in it."""
    foreign = sorted(p.name for p in target.iterdir() if not _TABLE_FOLDER_ENTRY.fullmatch(p.name))
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        msg = (
            f"{str(target)!r} is a folder holding files no run wrote ({shown}); an output is never written over "
            "it. Choose another output path, or move the folder away."
        )
        raise IsADirectoryError(msg)


def replace_whole(temporary: Path, target: Path) -> None:
    """Rename ``temporary`` (a file or a folder) to ``target`` in one step, then fsync the
    folder.  A file replaces a file atomically (:func:`os.replace`); a folder in the way
    (e.g. Spark's output of the same table by ``ppdm run --engine spark``) cannot be
    replaced so: it is renamed aside first and removed after, so a reader finds the old
    output, then for an instant none, then the new one -- never a part of either."""
    if (target.is_dir() and not target.is_symlink()) or (temporary.is_dir() and target.exists()):
        if target.is_dir() and not target.is_symlink():
            check_replaceable_folder(target)
        aside = target.with_name(f".{target.name}.ppdm-{os.getpid()}-{secrets.token_hex(4)}.old")
        os.replace(target, aside)
        os.replace(temporary, target)
        fsync_folder(target.parent)
        if aside.is_dir():
            shutil.rmtree(aside, ignore_errors=True)
        else:
            aside.unlink(missing_ok=True)
        return
    os.replace(temporary, target)
    fsync_folder(target.parent)


def write_bytes_atomic(target: Path, data: bytes) -> str:
    """Write ``data`` to ``target`` atomically; returns its SHA-256."""
    with atomic_path(target) as temporary:
        with open(temporary, "wb") as file:
            file.write(data)
    return hashlib.sha256(data).hexdigest()
