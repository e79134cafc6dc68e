"""Durable writes, shared by the secret files, the ledger, the pipeline's outputs and the
report (:mod:`polars_ppdm.jobs` and :mod:`polars_ppdm.reporting` both write through here).

After ``os.replace`` / ``os.link`` the new name survives a crash only once its folder is
fsync-ed (POSIX): :func:`fsync_folder`.  :func:`file_kind` gives the words for what is
not a regular file (a path a run would write, or a ledger, that is a FIFO or a device is
refused).

Atomic output files (:func:`atomic_path`, :func:`write_bytes_atomic`): written under a
temporary name in the target's folder, fsync-ed, then renamed over the target
(:func:`os.replace`), and the folder fsync-ed.  A reader, or a run killed at any point,
sees the previous file or the new one whole, never a part of one under the final name.
A killed run leaves its temporary file (``.NAME.ppdm-PID-XXXXXXXX.tmp``) behind; the
next write to the same target removes those whose process is gone.
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
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "atomic_path",
    "check_replaceable_folder",
    "file_kind",
    "fsync_folder",
    "make_readable",
    "private_temporary",
    "remove_stale",
    "replace_whole",
    "stale_temporaries",
    "temporaries",
    "temporary_name",
    "write_bytes_atomic",
]


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


def temporary_name(target: Path) -> Path:
    """A fresh temporary name beside ``target`` (``.NAME.ppdm-PID-XXXXXXXX.tmp``): its
    pid lets :func:`remove_stale` tell a killed writer's leftover from a live one's."""
    return target.with_name(f".{target.name}.ppdm-{os.getpid()}-{secrets.token_hex(4)}.tmp")


def private_temporary(target: Path, *, folder: bool = False) -> Path:
    """A fresh temporary beside ``target`` (:func:`temporary_name`) that only this user can
    read: a file of mode 0600, or with ``folder`` a folder of mode 0700 (a writer fills
    it).  What a run computes before its commit is kept so: a reader of the outputs'
    folder cannot take a release the ledger then withdraws (attack review 64).
    :func:`make_readable` gives it the usual mode once it may be published."""
    temporary = temporary_name(target)
    if folder:
        os.mkdir(temporary, 0o700)
    else:
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return temporary


def _keep_mode(temporary: Path, target: Path) -> bool:
    """Give ``temporary`` the mode of ``target`` where it replaces one of its kind (not a
    symlink, which the rename replaces itself); False where there is none."""
    try:
        replaced = os.lstat(target)
    except OSError:
        return False
    if stat.S_ISLNK(replaced.st_mode) or stat.S_ISDIR(replaced.st_mode) != temporary.is_dir():
        return False
    os.chmod(temporary, stat.S_IMODE(replaced.st_mode))
    return True


def make_readable(temporary: Path, target: Path) -> None:
    """Give a :func:`private_temporary` the mode of the output it replaces (of the same
    kind: an operator's ``chmod`` of a published table survives the next run), else the
    mode a file (or folder) newly made beside ``target`` gets (the umask, a default ACL)."""
    if _keep_mode(temporary, target):
        return
    probe = temporary_name(target)
    try:
        if temporary.is_dir():
            os.mkdir(probe, 0o777)
        else:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        mode = stat.S_IMODE(os.stat(probe).st_mode)
    finally:
        with contextlib.suppress(OSError):
            if probe.is_dir():
                probe.rmdir()
            else:
                probe.unlink()
    os.chmod(temporary, mode)


def temporaries(target: Path, *, others_only: bool = False) -> list[Path]:
    """The temporaries of ``target`` (files, or folders of Spark part files), by the pid
    in their names; with ``others_only``, those of other processes."""
    return [
        entry
        for entry, pid in _temporaries(target)
        if not (others_only and pid == os.getpid())
    ]


def stale_temporaries(target: Path) -> list[Path]:
    """The temporaries of ``target`` left by processes that no longer run."""
    return [entry for entry, pid in _temporaries(target) if not _alive(pid)]


def _temporaries(target: Path) -> list[tuple[Path, int]]:
    pattern = re.compile(rf"\.{re.escape(target.name)}\.ppdm-(\d+)-[0-9a-f]{{8}}\.tmp")
    folder = target.parent
    if not folder.is_dir():
        return []
    return [
        (entry, int(match[1])) for entry in folder.iterdir() if (match := pattern.fullmatch(entry.name)) is not None
    ]


def remove_stale(target: Path) -> list[Path]:
    """Remove the temporaries of ``target`` left by processes that no longer run; returns
    those removed (one that cannot be removed stays, and :func:`stale_temporaries` lists it)."""
    import shutil

    removed: list[Path] = []
    for entry in stale_temporaries(target):
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
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


@contextlib.contextmanager
def atomic_path(target: Path, *, private: bool = False) -> Iterator[Path]:
    """A temporary path beside ``target`` to write to; when the block ends without an
    error the file is fsync-ed, given the mode of the file it replaces (if any; else, if
    ``private``, mode 0600), and renamed to ``target``, otherwise removed.

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
    temporary = temporary_name(target)
    try:
        yield temporary
        with open(temporary, "rb") as file:
            os.fsync(file.fileno())
        # An operator's chmod of the file it replaces survives; a new operator's record
        # (an internal report, a manifest) is theirs alone until they say otherwise.
        if not _keep_mode(temporary, target) and private:
            os.chmod(temporary, 0o600)
        replace_whole(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


# What a table Spark wrote holds: its part files, Hadoop's markers and checksums.
_TABLE_FOLDER_ENTRY = re.compile(r"(part-.*|_SUCCESS|_committed_.*|_started_.*|\..*\.crc)")


def table_files(path: Path) -> list[Path]:
    """The files of a published table: the file itself, or a Spark folder's part files
    (sorted; Hadoop's markers and checksums left out)."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.name.startswith("part-"))
    return [path]


def file_identity(path: Path) -> tuple[int, ...]:
    """What changes when a file is replaced or written to: device, inode, size, mtime and
    ctime (ctime no one can set back)."""
    found = os.stat(path)
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


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


def write_bytes_atomic(target: Path, data: bytes, *, private: bool = False) -> str:
    """Write ``data`` to ``target`` atomically (``private``: a new file of mode 0600, see
    :func:`atomic_path`); returns its SHA-256."""
    with atomic_path(target, private=private) as temporary:
        with open(temporary, "wb") as file:
            file.write(data)
    return hashlib.sha256(data).hexdigest()
