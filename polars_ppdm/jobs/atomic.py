"""The SHA-256 of a pipeline's outputs: of a finished file (:func:`file_sha256`) and of
a file still being written (:class:`GrowingFileHash`).

The atomic writes themselves (a temporary name, fsync, rename over the target, fsync the
folder) are :mod:`polars_ppdm._durable`'s, shared with :mod:`polars_ppdm.reporting`;
their names stay importable from here.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

from polars_ppdm._durable import (
    atomic_path,
    check_replaceable_folder,
    make_readable,
    private_temporary,
    remove_stale,
    replace_whole,
    stale_temporaries,
    temporaries,
    write_bytes_atomic,
)

__all__ = [
    "GrowingFileHash",
    "atomic_path",
    "check_replaceable_folder",
    "file_sha256",
    "make_readable",
    "private_temporary",
    "remove_stale",
    "replace_whole",
    "stale_temporaries",
    "temporaries",
    "write_bytes_atomic",
]

_CHUNK = 1 << 20


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
