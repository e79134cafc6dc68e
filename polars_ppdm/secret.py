"""The secret behind every keyed random draw.

A secret is 128 or 256 random bits: the AES key of the keyed PRF (see
:mod:`polars_ppdm.kernels.prf`).  Whoever holds it can recompute every coin and undo the
disguise, so it is handled like a password: never printed, logged or written into an
output.  ``repr`` shows a fingerprint only.

Accepted forms of ``secret=`` everywhere in the library:

* ``None`` -- a fresh secret from the OS (``os.urandom``); results are not reproducible;
* a :class:`Secret`;
* ``bytes`` of length 16 or 32;
* a hex string of 32 or 64 hex digits;
* ``"env:NAME"`` -- the hex secret held in environment variable ``NAME`` (for jobs: the
  secret then never appears in code, SQL text or logs);
* ``"file:PATH"`` -- the hex secret held in the file ``PATH``, of mode 0600 (as
  ``ppdm secret --output PATH`` writes it; checked by
  :func:`polars_ppdm.secret_files.read_secret_file`);
* an ``int`` (or a string of decimal digits) -- **guessable**, for tests and examples
  only: an attacker can try every small integer.  It is stretched with SHA-256 into a
  128-bit key, which does not make it any harder to guess.

Differentially private releases and ``ppdm run`` refuse a guessable secret (an integer, a
key of one repeated byte or of a short repeated pattern such as all zeros): whoever
guesses it recomputes the noise and subtracts it (:func:`require_strong_secret`).  Tests
and documentation examples that need reproducible DP output say so by name:
:meth:`Secret.for_tests` (``ppdm.Secret.for_tests(7)``), the one escape.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import string

from polars_ppdm._held import HeldKey
from polars_ppdm.exceptions import SecretError

__all__ = [
    "Secret",
    "SecretLike",
    "new_secret",
    "require_strong_secret",
    "resolve_secret",
    "secret_from_env",
]

_HEX = set(string.hexdigits)


class Secret:
    """A 128- or 256-bit secret key for the keyed randomness.

    Examples
    --------
    >>> s = Secret.from_int(42)
    >>> s
    Secret(fingerprint='...')
    >>> s == Secret.from_int(42)
    True
    """

    __slots__ = ("_key", "for_tests_only", "guessable")

    def __init__(self, key: bytes, *, guessable: bool = False) -> None:
        if not isinstance(key, bytes | bytearray) or len(key) not in (16, 32):
            got = f"{len(key)} bytes" if isinstance(key, bytes | bytearray) else type(key).__name__
            msg = f"A secret must be 16 or 32 bytes (128 or 256 bits). Got {got} instead."
            raise SecretError(msg)
        # Bytes that a query plan's functions hold by handle: pickled with a serialized
        # plan, the key is a handle, never itself (polars_ppdm._held).
        self._key = HeldKey(key)
        self.guessable = guessable or _weak_key(self._key)
        self.for_tests_only = False

    @classmethod
    def from_hex(cls, text: str) -> Secret:
        """A secret from 32 or 64 hex digits."""
        text = text.strip()
        if len(text) not in (32, 64) or not set(text) <= _HEX:
            msg = (
                "A hex secret must be 32 or 64 hex digits (128 or 256 bits). "
                f"Got a string of {_what_it_holds(text)} instead."
            )
            raise SecretError(msg)
        return cls(bytes.fromhex(text))

    @classmethod
    def from_int(cls, value: int) -> Secret:
        """A reproducible secret from an integer.  Guessable: for tests and examples only."""
        digest = hashlib.sha256(b"polars_ppdm/int-seed/" + str(int(value)).encode()).digest()
        return cls(digest[:16], guessable=True)

    @classmethod
    def for_tests(cls, seed: int) -> Secret:
        """A reproducible, **public** secret for tests and documentation examples.

        The named escape from :func:`require_strong_secret`: differentially private
        releases accept it (they refuse ``secret=7`` and other guessable secrets), so
        their outputs can be pinned in a test.  Anyone can recompute its noise: never use
        it for data you publish.

        Examples
        --------
        >>> s = Secret.for_tests(7)
        >>> s.guessable, s.for_tests_only
        (True, True)
        """
        secret = cls.from_int(seed)
        secret.for_tests_only = True
        return secret

    @classmethod
    def generate(cls, bits: int = 256) -> Secret:
        """A fresh secret from the operating system's random source."""
        if bits not in (128, 256):
            msg = f"The 'bits' parameter of Secret.generate must be 128 or 256. Got {bits!r} instead."
            raise SecretError(msg)
        while True:  # a key the releases would refuse as guessable (~1e-7 at 128 bits) is drawn again
            key = os.urandom(bits // 8)
            if not _weak_key(key):
                return cls(key)

    @property
    def key(self) -> bytes:
        """The raw key bytes (for the kernels; do not log them)."""
        return self._key

    def fingerprint(self) -> str:
        """Eight hex digits identifying the secret without revealing it (for manifests)."""
        return hashlib.sha256(b"polars_ppdm/fingerprint/" + self._key).hexdigest()[:8]

    def reveal_hex(self) -> str:
        """The secret as hex, e.g. to store it in a vault.  Treat the result as a password."""
        return self._key.hex()

    def __repr__(self) -> str:
        return f"Secret(fingerprint='{self.fingerprint()}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __reduce__(self) -> tuple[type[Secret], tuple[bytes], dict[str, bool]]:
        # Picklable, the key itself, so that process pools and Spark workers can receive it.
        return (
            Secret,
            (bytes(self._key),),
            {"guessable": self.guessable, "for_tests_only": self.for_tests_only},
        )

    def __setstate__(self, state: dict[str, bool]) -> None:
        self.guessable = state["guessable"]
        self.for_tests_only = state.get("for_tests_only", False)


#: The integer seeds whose keys (:meth:`Secret.from_int`, :meth:`Secret.for_tests`) are
#: recognised when they come back as raw bytes or hex: the public test secrets of the
#: docs and tests, copied into an environment variable or a file.
_KNOWN_SEEDS = range(-1000, 10_000)


@functools.lru_cache(maxsize=1)
def _seed_keys() -> frozenset[bytes]:
    # ~10,000 SHA-256: a few milliseconds, once per process.
    return frozenset(
        hashlib.sha256(b"polars_ppdm/int-seed/" + str(seed).encode()).digest()[:16] for seed in _KNOWN_SEEDS
    )


def _weak_key(key: bytes) -> bool:
    """A key an attacker tries first: one shorter pattern repeated (all zeros, ``ab`` x 16,
    any half repeated), a small integer written as bytes (``00...07`` either way round),
    a run of bytes counting up or down (``00 01 02 ...``), a key of fewer than 8 distinct
    byte values, a key of printable characters only (a password or a phrase typed as the
    key: a random 128-bit key is one with probability ~1e-7), or the key of a small
    integer seed (:meth:`Secret.for_tests` of a doc's example, given as hex).  A random
    128-bit key is any of the others with probability below 2^-40."""
    if any(key == key[:period] * (len(key) // period) for period in (1, 2, 4, 8, 16) if period < len(key)):
        return True
    small = 2**64
    if int.from_bytes(key, "big") < small or int.from_bytes(key, "little") < small:
        return True
    if all(0x20 <= b <= 0x7E for b in key) or key in _seed_keys():
        return True
    steps = {(b - a) % 256 for a, b in itertools.pairwise(key)}
    return len(steps) == 1 or len(set(key)) < 8


def require_strong_secret(secret: Secret, func: str, *, sql: bool = False) -> Secret:
    """Refuse a guessable secret for a release whose noise must stay secret (``sql``: the
    advice in the words of the SQL functions' 'secret' argument).

    A DP release under a guessable secret (an integer, a key of one repeated byte or short
    pattern) is no DP release: the attacker recomputes the noise and subtracts it.
    :meth:`Secret.for_tests` is let through: the caller said by name that the output is a
    test's.

    Examples
    --------
    >>> require_strong_secret(Secret.for_tests(7), "dp_histogram").for_tests_only
    True
    >>> require_strong_secret(Secret.from_int(7), "dp_histogram")
    Traceback (most recent call last):
    ...
    polars_ppdm.exceptions.SecretError: The 'secret' parameter of dp_histogram is guessable ...
    """
    if secret.guessable and not secret.for_tests_only:
        why = (
            "(an integer; a key of one repeated byte or a repeated shorter pattern such as all zeros, or counting "
            "up; a key of printable characters only, such as a password; or the key of a public test seed, given as "
            "hex): anyone could recompute the noise and subtract it."
        )
        if sql:
            msg = (
                f"The 'secret' argument of {func} is guessable {why} Give a secret made by `ppdm secret`: "
                "'env:NAME' or 'file:PATH' naming where it is kept (or its hex digits)."
            )
        else:
            msg = (
                f"The 'secret' parameter of {func} is guessable {why} Use secret=None (fresh randomness), a "
                "secret from `ppdm secret` (hex, 'env:NAME' or a Secret), or, in a test or a documentation "
                "example, ppdm.Secret.for_tests(seed)."
            )
        raise SecretError(msg)
    return secret


SecretLike = Secret | bytes | str | int | None


def new_secret(bits: int = 256) -> str:
    """Make a new random secret and return it as hex, to store in a vault or env variable.

    Examples
    --------
    >>> len(new_secret())
    64
    >>> len(new_secret(128))
    32
    """
    return Secret.generate(bits).reveal_hex()


def secret_from_env(name: str = "PPDM_SECRET") -> Secret:
    """Read a hex secret from the environment variable ``name``.

    Examples
    --------
    >>> import os
    >>> os.environ["DOC_SECRET"] = "00" * 16
    >>> secret_from_env("DOC_SECRET") == Secret(bytes(16))
    True
    """
    _check_variable_name(name)
    return env_secret(name, os.environ.get(name))


def env_secret(name: str, value: str | None) -> Secret:
    """The secret that the environment variable ``name`` holds when its value is ``value``
    (None: not set), with :func:`secret_from_env`'s errors -- for a caller that has read
    the variable already and must use what it read.

    Examples
    --------
    >>> env_secret("DOC_SECRET", "00" * 16) == Secret(bytes(16))
    True
    """
    _check_variable_name(name)
    if value is None:
        msg = f"The environment variable {name!r} holding the secret is not set."
        raise SecretError(msg)
    try:
        return Secret.from_hex(value)
    except SecretError:
        # Not what it holds (its length, whether it is hex): 'env:NAME' names any variable
        # of the process, and an SQL user's refusal told another variable's length (attack
        # review 73).
        msg = (
            f"The environment variable {name!r} does not hold a hex secret (32 or 64 hex digits, "
            "as `ppdm secret` prints)."
        )
        raise SecretError(msg) from None


def _check_variable_name(name: object) -> None:
    if not isinstance(name, str) or not name or "=" in name or "\0" in name:
        msg = (
            "The 'name' parameter of secret_from_env must be the name of an environment variable "
            f"(a non-empty str without '=' or NUL). Got {name!r} instead."
        )
        raise SecretError(msg)


def _what_it_holds(text: str) -> str:
    """What a refused secret string is, for its message: its length, and whether some
    characters are not hex where the length is right (which ones would be the secret's)."""
    if len(text) in (32, 64):
        return f"{len(text)} characters, some of them not hex digits (0-9, a-f, A-F)"
    return f"{len(text)} characters"


def resolve_secret(secret: SecretLike) -> Secret:
    """Turn any accepted ``secret=`` value into a :class:`Secret` (see the module docs).

    Examples
    --------
    >>> resolve_secret(7) == resolve_secret("7")
    True
    >>> resolve_secret("ab" * 16) == Secret(bytes.fromhex("ab" * 16))
    True
    """
    if secret is None:
        return Secret.generate(128)
    if isinstance(secret, Secret):
        return secret
    if isinstance(secret, bool):
        msg = f"The 'secret' parameter must be a secret, hex string, bytes or int. Got {secret!r} instead."
        raise SecretError(msg)
    if isinstance(secret, int):
        return Secret.from_int(secret)
    if isinstance(secret, bytes | bytearray):
        return Secret(bytes(secret))
    if isinstance(secret, str):
        text = secret.strip()
        if text.startswith("env:"):
            return secret_from_env(text[4:])
        if text.startswith("file:"):
            from polars_ppdm.secret_files import read_secret_file

            try:
                return read_secret_file(text[5:])
            except OSError as error:
                msg = (
                    f"The secret file {text[5:]!r} cannot be read: {error.strerror or type(error).__name__}."
                )
                raise SecretError(msg) from None
        if len(text) in (32, 64) and set(text) <= _HEX:
            return Secret.from_hex(text)
        digits = text.removeprefix("-")
        # isdecimal, not isdigit: int() refuses digits such as '²' (isdigit accepts them)
        # with a ValueError that quotes the string, i.e. the secret.
        if digits.isdecimal() and digits.isascii():
            if len(digits) > 4000:  # int() refuses more than 4300 digits (CVE-2020-10735)
                msg = (
                    "The 'secret' parameter, as decimal digits, must have at most 4000 digits. "
                    f"Got {len(digits)} digits instead; use 64 hex digits for a strong secret."
                )
                raise SecretError(msg)
            return Secret.from_int(int(text))
        msg = (
            "The 'secret' parameter, as a string, must be 32 or 64 hex digits, 'env:NAME', 'file:PATH' or "
            f"a decimal integer. Got a string of {_what_it_holds(text)} instead."
        )
        raise SecretError(msg)
    msg = (
        "The 'secret' parameter must be a Secret, bytes, a hex string, 'env:NAME', 'file:PATH', an int or "
        f"None. Got {type(secret).__name__} instead."
    )
    raise SecretError(msg)
