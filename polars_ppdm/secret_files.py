"""Files that hold secrets: written with mode 0600, atomically; refused on load when
others can read them.

A secret file is the hex secret of ``ppdm secret --output`` (:func:`write_secret_file`,
:func:`read_secret_file`), a spiral key (:meth:`polars_ppdm.SpiralKey.save` /
:meth:`~polars_ppdm.SpiralKey.load`), or any other text that undoes a release
(:func:`write_secret_text`, :func:`read_secret_text`).

Writing
    The text goes to a temporary file in the target's folder, created with mode 0600 (by
    :func:`tempfile.mkstemp`, whatever the umask), is flushed and ``fsync``-ed, and only
    then gets the target's name: by a hard link, which fails when the name exists (so an
    existing file is never replaced unless ``overwrite=True``), or with ``overwrite=True``
    by :func:`os.replace`.  A reader sees the whole file or none; a failed write leaves no
    file and no temporary behind.  On a file system without hard links (FAT, some network
    shares) the no-overwrite rename falls back to "check that the name is free, then
    :func:`os.replace`": still all-or-nothing, but a file created by someone else in
    between would be replaced.

Loading
    The file is opened (a symlink is followed), and the opened file itself is checked:
    it must be a regular file, owned by the current user (or by root, who can read every
    file anyway), with no permission bit for group or others (mode 0600 or 0400).  A file
    others can read leaks the secret; one they can write lets them swap in a secret they
    know.  The refusal says how to fix it (``chmod 600 PATH``).

Windows
    Windows has no POSIX modes: ``os.stat`` reports only a read-only flag, and who may
    read a file is decided by its access-control list, inherited from its folder.  There
    the files are written the same way (atomically, never overwritten unless asked) but
    no mode is set, and on load the permissions are not checked: a
    :class:`~polars_ppdm.exceptions.PrivacyLeakWarning` says so.  Keep secret files under
    your user profile (e.g. ``%LOCALAPPDATA%``), whose ACL admits only you and the
    administrators.

No message of this module ever holds the file's content.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import tempfile
import warnings
from pathlib import Path

from polars_ppdm._durable import fsync_folder
from polars_ppdm.exceptions import PrivacyLeakWarning, SecretError
from polars_ppdm.secret import Secret

__all__ = ["read_secret_file", "read_secret_text", "write_secret_file", "write_secret_text"]

# POSIX modes and owners exist (Linux, macOS, the BSDs); False on Windows.
_POSIX = os.name == "posix"
# A secret file is small (a hex secret: 65 bytes; a spiral key of 200 columns: ~1 MB);
# anything larger is the wrong file, and is not read into memory.
_MAX_BYTES = 64 * 2**20


def write_secret_text(path: str | os.PathLike[str], text: str, *, overwrite: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path``: mode 0600, atomically, never over an existing
    file unless ``overwrite``.

    Parameters
    ----------
    path : str or path-like
        The file to create.  Its folder must exist.
    text : str
        What the file holds.  Never shown in a message.
    overwrite : bool, default False
        Replace an existing file (atomically: a reader sees the old file or the new one).
        Without it an existing ``path`` (a dangling symlink included) is refused.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileExistsError
        When ``path`` exists and ``overwrite`` is False.
    FileNotFoundError
        When the folder of ``path`` does not exist.

    Examples
    --------
    >>> import os, stat, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> target = write_secret_text(os.path.join(folder, "key.json"), '{"k": 1}')
    >>> oct(stat.S_IMODE(os.stat(target).st_mode))
    '0o600'
    >>> read_secret_text(target)
    '{"k": 1}'
    >>> write_secret_text(target, "other")
    Traceback (most recent call last):
    ...
    FileExistsError: The secret file '...key.json' already exists; ...
    >>> _ = write_secret_text(target, "other", overwrite=True)
    >>> read_secret_text(target)
    'other'
    """
    if not isinstance(text, str):
        msg = f"The 'text' parameter of write_secret_text must be a str. Got {type(text).__name__} instead."
        raise TypeError(msg)
    if not isinstance(overwrite, bool):
        msg = f"The 'overwrite' parameter of write_secret_text must be True or False. Got {overwrite!r} instead."
        raise TypeError(msg)
    target = _as_path(path, "write_secret_text")
    folder = target.parent
    if not folder.is_dir():
        msg = f"The folder {str(folder)!r} of the secret file {str(target)!r} does not exist."
        raise FileNotFoundError(msg)
    if target.is_dir():
        msg = f"The secret file {str(target)!r} is a directory."
        raise IsADirectoryError(msg)
    if not overwrite and _exists(target):
        raise FileExistsError(_exists_message(target))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            if _POSIX:
                os.fchmod(file.fileno(), 0o600)  # mkstemp's mode already; said again
            file.write(text.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        if overwrite:
            os.replace(temporary, target)
        else:
            _rename_new(temporary, target)
        fsync_folder(folder)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return target


def read_secret_text(path: str | os.PathLike[str]) -> str:
    """The text of a secret file, after checking that only its owner can read it.

    Parameters
    ----------
    path : str or path-like
        The file (a symlink is followed; the file it points to is checked).

    Raises
    ------
    SecretError
        When group or others have any permission on the file, when it is owned by
        another user (not root), when it is not a regular file, is too large (over
        64 MiB) or is not UTF-8 text.  The message says how to fix it and never shows
        the content.
    FileNotFoundError, PermissionError
        When the file is absent or cannot be opened.

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "open")
    >>> with open(target, "w") as file:
    ...     _ = file.write("00" * 16)
    >>> os.chmod(target, 0o644)
    >>> read_secret_text(target)
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.SecretError: The secret file '...open' has mode 0644: ... chmod 600 ...
    """
    target = _as_path(path, "read_secret_text")
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    )
    fd = os.open(target, flags)  # O_NONBLOCK: a FIFO is refused below, not waited on
    try:
        info = os.fstat(fd)
        _check(target, info)
        if info.st_size > _MAX_BYTES:
            msg = f"The secret file {str(target)!r} holds {info.st_size:,} bytes: not a secret file (at most {_MAX_BYTES:,})."
            raise SecretError(msg)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            if sum(map(len, chunks)) > _MAX_BYTES:
                msg = (
                    f"The secret file {str(target)!r} is larger than {_MAX_BYTES:,} bytes: not a secret file."
                )
                raise SecretError(msg)
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        # UnicodeDecodeError's own message quotes a byte of the content: not shown.
        msg = f"The secret file {str(target)!r} is not UTF-8 text."
        raise SecretError(msg) from None


def write_secret_file(path: str | os.PathLike[str], secret: Secret, *, overwrite: bool = False) -> Path:
    """Write ``secret`` as one line of hex to ``path``, as :func:`write_secret_text` does.

    A guessable secret (from an integer) is refused: its file would read back as if it
    were random.

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "ppdm.secret")
    >>> secret = Secret.generate(128)
    >>> _ = write_secret_file(target, secret)
    >>> read_secret_file(target) == secret
    True
    """
    if not isinstance(secret, Secret):
        msg = f"The 'secret' parameter of write_secret_file must be a Secret (e.g. Secret.generate()). Got {type(secret).__name__} instead."
        raise SecretError(msg)
    if secret.guessable:
        msg = (
            "The 'secret' parameter of write_secret_file is a guessable secret (made from an "
            "integer, for tests); a secret file holds a random one (Secret.generate())."
        )
        raise SecretError(msg)
    return write_secret_text(path, secret.reveal_hex() + "\n", overwrite=overwrite)


def read_secret_file(path: str | os.PathLike[str]) -> Secret:
    """The :class:`~polars_ppdm.Secret` held as hex (32 or 64 digits) in a secret file,
    after the checks of :func:`read_secret_text`.

    Examples
    --------
    >>> import os, tempfile
    >>> target = os.path.join(tempfile.mkdtemp(), "ppdm.secret")
    >>> _ = write_secret_text(target, "ab" * 32 + "\\n")
    >>> read_secret_file(target).reveal_hex() == "ab" * 32
    True
    """
    # A byte-order mark is an editor's (Notepad's "UTF-8 with BOM"), never part of a secret.
    text = read_secret_text(path).removeprefix("\ufeff")
    try:
        return Secret.from_hex(text)
    except SecretError as error:
        msg = f"The secret file {str(Path(path))!r} does not hold a hex secret: {error}"
        raise SecretError(msg) from None


def _as_path(path: object, func: str) -> Path:
    if isinstance(path, str | os.PathLike) and str(os.fspath(path)):
        return Path(path)
    msg = (
        f"The 'path' parameter of {func} must be a non-empty str or path. Got {type(path).__name__} instead."
    )
    raise TypeError(msg)


def _exists(target: Path) -> bool:
    return target.exists() or target.is_symlink()


def _exists_message(target: Path) -> str:
    return (
        f"The secret file {str(target)!r} already exists; a secret file is never overwritten "
        "unless asked (overwrite=True), so remove it or choose another path."
    )


def _rename_new(temporary: str, target: Path) -> None:
    """Give ``temporary`` the name ``target``, which must be free (atomic with a hard link)."""
    try:
        os.link(temporary, target)
    except FileExistsError:
        raise FileExistsError(_exists_message(target)) from None
    except (OSError, NotImplementedError):
        # No hard links on this file system: check, then rename (all-or-nothing still).
        if _exists(target):
            raise FileExistsError(_exists_message(target)) from None
        os.replace(temporary, target)


def _check(target: Path, info: os.stat_result) -> None:
    shown = str(target)
    real = os.path.realpath(target)
    via = f" (the symlink {shown!r} points to it)" if real != os.path.abspath(target) else ""
    where = repr(real) if via else repr(shown)
    if not stat.S_ISREG(info.st_mode):
        msg = f"The secret file {where}{via} is not a regular file (a directory, device or pipe)."
        raise SecretError(msg)
    if not _POSIX:
        warnings.warn(
            f"The permissions of the secret file {where} are not checked on this system (no POSIX "
            "modes: its folder's access-control list decides who can read it). Keep secret "
            "files under your user profile.",
            PrivacyLeakWarning,
            stacklevel=4,
        )
        return
    user = os.geteuid()
    if info.st_uid not in (user, 0):
        msg = (
            f"The secret file {where}{via} is owned by user id {info.st_uid}, not by you ({user}): "
            "its owner can read it and replace the secret. Copy it into a file of your own with "
            f"mode 0600 (install -m 600 {shlex.quote(real)} NEW_PATH) and use that."
        )
        raise SecretError(msg)
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        who = " and ".join(name for name, bits in (("group", 0o070), ("others", 0o007)) if mode & bits)
        msg = (
            f"The secret file {where}{via} has mode {mode:04o}: {who} can "
            f"{'read' if mode & 0o044 else 'change'} it, and only its owner may. "
            f"Fix it with: chmod 600 {shlex.quote(real)}"
        )
        raise SecretError(msg)
