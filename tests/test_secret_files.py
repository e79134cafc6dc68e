"""Files that hold secrets: mode 0600, atomic writes, never overwritten unless asked, and
refused on load when others can read (or change) them, with the fix in the message."""

from __future__ import annotations

import os
import re
import stat

import pytest

import polars_ppdm as ppdm
from polars_ppdm import secret_files
from polars_ppdm.exceptions import PrivacyLeakWarning, SecretError
from polars_ppdm.secret_files import read_secret_file, read_secret_text, write_secret_file, write_secret_text

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX modes and owners")


def mode(path: os.PathLike[str]) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@posix_only
@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_written_files_are_mode_0600_whatever_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        target = write_secret_text(tmp_path / "s", "x")
        replaced = write_secret_text(tmp_path / "s", "y", overwrite=True)
    finally:
        os.umask(old)
    assert mode(target) == 0o600 and mode(replaced) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # no temporary left over


@posix_only
def test_overwrite_of_an_open_file_gives_a_new_0600_file(tmp_path):
    target = tmp_path / "s"
    target.write_text("old")
    target.chmod(0o644)
    write_secret_text(target, "new", overwrite=True)
    assert mode(target) == 0o600 and read_secret_text(target) == "new"


def test_an_existing_file_is_never_overwritten_unless_asked(tmp_path):
    target = tmp_path / "s"
    write_secret_text(target, "first")
    with pytest.raises(FileExistsError, match=r"already exists.*overwrite=True") as info:
        write_secret_text(target, "second")
    assert str(target) in str(info.value) and "second" not in str(info.value)
    assert read_secret_text(target) == "first"
    write_secret_text(target, "second", overwrite=True)
    assert read_secret_text(target) == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


@posix_only
def test_a_dangling_symlink_counts_as_existing(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        write_secret_text(link, "x")
    assert not (tmp_path / "elsewhere").exists()


def test_the_no_overwrite_rename_is_atomic_even_if_the_name_appears_meanwhile(tmp_path, monkeypatch):
    # Someone creates the file between the check and the rename: the hard link refuses.
    target = tmp_path / "s"
    real_mkstemp = secret_files.tempfile.mkstemp

    def mkstemp_then_race(**kwargs):
        found = real_mkstemp(**kwargs)
        target.write_text("theirs")
        return found

    monkeypatch.setattr(secret_files.tempfile, "mkstemp", mkstemp_then_race)
    with pytest.raises(FileExistsError):
        write_secret_text(target, "mine")
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_failed_write_leaves_no_partial_file_and_the_old_one_intact(tmp_path, monkeypatch, overwrite):
    target = tmp_path / "s"
    if overwrite:
        write_secret_text(target, "old secret")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(secret_files.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_secret_text(target, "new secret " * 1000, overwrite=overwrite)
    monkeypatch.undo()
    if overwrite:
        assert read_secret_text(target) == "old secret"
    else:
        assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["s"] if overwrite else [])


def test_a_write_into_a_missing_folder_or_onto_a_folder_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent"):
        write_secret_text(tmp_path / "absent" / "s", "x")
    with pytest.raises(IsADirectoryError):
        write_secret_text(tmp_path, "x", overwrite=True)
    with pytest.raises(TypeError, match="'text' parameter"):
        write_secret_text(tmp_path / "s", b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'overwrite' parameter"):
        write_secret_text(tmp_path / "s", "x", overwrite="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'path' parameter"):
        write_secret_text(None, "x")  # type: ignore[arg-type]


@posix_only
@pytest.mark.parametrize(
    ("file_mode", "who"), [(0o644, "group and others"), (0o640, "group"), (0o604, "others")]
)
def test_a_file_others_can_read_is_refused_with_the_fix(tmp_path, file_mode, who):
    target = tmp_path / "secret file"
    target.write_text("ab" * 32)
    target.chmod(file_mode)
    for read in (read_secret_text, read_secret_file, ppdm.SpiralKey.load):
        with pytest.raises(SecretError) as info:
            read(target)
        message = str(info.value)
        assert f"mode {file_mode:04o}" in message and f"{who} can read it" in message
        assert f"chmod 600 '{target}'" in message  # quoted for the shell: the path has a space
        assert "ab" * 4 not in message  # never the content
    target.chmod(0o600)
    assert read_secret_file(target).reveal_hex() == "ab" * 32


@posix_only
@pytest.mark.parametrize("file_mode", [0o620, 0o602])
def test_a_file_others_can_change_is_refused(tmp_path, file_mode):
    target = tmp_path / "s"
    target.write_text("ab" * 32)
    target.chmod(file_mode)
    with pytest.raises(SecretError, match=rf"mode {file_mode:04o}: .* can change it.*chmod 600"):
        read_secret_text(target)


@posix_only
def test_owner_only_modes_are_accepted(tmp_path):
    target = tmp_path / "s"
    target.write_text("x")
    for ok in (0o600, 0o400, 0o700):
        target.chmod(ok)
        assert read_secret_text(target) == "x"


@posix_only
def test_a_symlink_to_an_open_file_is_refused_and_names_the_real_file(tmp_path):
    real = tmp_path / "real"
    real.write_text("cd" * 16)
    real.chmod(0o644)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(
        SecretError,
        match=f"symlink {re.escape(repr(str(link)))} points to it.*chmod 600 {re.escape(str(real))}",
    ):
        read_secret_file(link)
    real.chmod(0o600)
    assert read_secret_file(link).reveal_hex() == "cd" * 16


@posix_only
def test_a_file_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    target = tmp_path / "s"
    target.write_text("ab" * 16)
    target.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(target, 4321, -1)  # as root: really another user's file
    else:
        monkeypatch.setattr(secret_files.os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(SecretError, match=r"is owned by user id .* not by you.*install -m 600"):
        read_secret_file(target)


@posix_only
def test_not_a_regular_file_is_refused_without_waiting(tmp_path):
    with pytest.raises(SecretError, match="not a regular file"):
        read_secret_text(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(SecretError, match="not a regular file"):
        read_secret_text(fifo)  # O_NONBLOCK: refused, not waited on


def test_a_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_secret_file(tmp_path / "absent")


def test_content_that_is_not_a_hex_secret_is_refused_without_showing_it(tmp_path):
    target = write_secret_text(tmp_path / "s", "not-a-secret-but-private\n")
    with pytest.raises(SecretError, match="does not hold a hex secret") as info:
        read_secret_file(target)
    assert "private" not in str(info.value)
    binary = tmp_path / "b"
    fd = os.open(binary, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"\xfe\xff secret bytes")
    os.close(fd)
    with pytest.raises(SecretError, match="not UTF-8 text") as info:
        read_secret_text(binary)
    assert "0xfe" not in str(info.value) and "secret bytes" not in str(info.value)


def test_secret_round_trip_and_a_guessable_secret_is_refused(tmp_path):
    secret = ppdm.Secret.generate()
    target = write_secret_file(tmp_path / "ppdm.secret", secret)
    assert target.read_text() == secret.reveal_hex() + "\n"
    assert read_secret_file(target) == secret
    with pytest.raises(SecretError, match="guessable"):
        write_secret_file(tmp_path / "other", ppdm.Secret.from_int(3))
    with pytest.raises(SecretError, match="must be a Secret"):
        write_secret_file(tmp_path / "other", secret.reveal_hex())  # type: ignore[arg-type]
    assert not (tmp_path / "other").exists()


def test_without_posix_modes_loading_warns_that_permissions_are_unchecked(tmp_path, monkeypatch):
    target = tmp_path / "s"
    target.write_text("ab" * 16)
    if os.name == "posix":
        target.chmod(0o644)
    monkeypatch.setattr(secret_files, "_POSIX", False)
    with pytest.warns(PrivacyLeakWarning, match="not checked on this system"):
        assert read_secret_file(target).reveal_hex() == "ab" * 16
    written = write_secret_text(tmp_path / "t", "x")
    assert written.read_text() == "x"


def test_a_variable_that_is_not_a_hex_secret_is_refused_without_its_length(monkeypatch):
    """Attack review 73: 'env:NAME' reads any variable of the process; the refusal said
    "Got a string of 40 characters", another secret's length, to an SQL user."""
    from polars_ppdm.secret import resolve_secret

    for value in ("x" * 40, "g" * 64, ""):
        monkeypatch.setenv("SOME_OTHER_KEY", value)
        with pytest.raises(SecretError, match="does not hold a hex secret") as info:
            resolve_secret("env:SOME_OTHER_KEY")
        assert not any(str(n) in str(info.value) for n in (40, len(value)) if n not in (32, 64))
        assert "not hex digits" not in str(info.value)
