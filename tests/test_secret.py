"""The secret: accepted forms, never shown, clear errors."""

from __future__ import annotations

import pickle

import polars as pl
import pytest

import polars_ppdm as ppdm
from polars_ppdm.exceptions import SecretError
from polars_ppdm.secret import Secret, resolve_secret

HEX = "9f1c37a8e2d45b06c8a1f37e5d9b2046"


def test_repr_and_str_show_a_fingerprint_only():
    secret = Secret.from_hex(HEX)
    for text in (repr(secret), str(secret), f"{secret}", f"{secret!r}"):
        assert HEX not in text and "fingerprint" in text
    assert len(secret.fingerprint()) == 8


def test_forms_resolve_to_the_same_key(monkeypatch):
    monkeypatch.setenv("PPDM_T", HEX)
    expected = Secret(bytes.fromhex(HEX))
    assert resolve_secret(HEX) == expected
    assert resolve_secret(HEX.upper()) == expected
    assert resolve_secret(bytes.fromhex(HEX)) == expected
    assert resolve_secret("env:PPDM_T") == expected
    assert ppdm.secret_from_env("PPDM_T") == expected
    assert resolve_secret(expected) is expected


def test_int_seeds_are_reproducible_and_flagged_guessable():
    assert resolve_secret(5) == resolve_secret(5) == resolve_secret("5")
    assert resolve_secret(5) != resolve_secret(6)
    assert resolve_secret(5).guessable and not Secret.from_hex(HEX).guessable


def test_no_seed_draws_from_the_os():
    assert resolve_secret(None) != resolve_secret(None)
    assert len(ppdm.new_secret()) == 64 and len(ppdm.new_secret(128)) == 32


def test_pickles_for_worker_processes():
    secret = resolve_secret(3)
    again = pickle.loads(pickle.dumps(secret))
    assert again == secret and again.guessable


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        (b"short", "16 or 32 bytes"),
        ("abc", "32 or 64 hex digits"),
        ("zz" * 16, "32 or 64 hex digits"),
        (1.5, "Got float"),
        (True, "Got True"),
        ("env:PPDM_SURELY_UNSET_VARIABLE", "is not set"),
    ],
)
def test_bad_secrets(seed, message):
    with pytest.raises(SecretError, match=message):
        resolve_secret(seed)


def test_env_variable_with_a_bad_secret_does_not_echo_it(monkeypatch):
    monkeypatch.setenv("PPDM_BAD", "not-hex-at-all-but-private")
    with pytest.raises(SecretError) as info:
        ppdm.secret_from_env("PPDM_BAD")
    assert "not-hex-at-all-but-private" not in str(info.value)
    with pytest.raises(SecretError, match="must be 128 or 256"):
        Secret.generate(64)


@pytest.mark.parametrize("seed", ["918273645546372819\u00b2", "7" * 5000])
def test_digit_like_strings_are_refused_as_secret_errors_without_echo(seed):
    """Issue 14: '12\u00b2' passed isdigit() and int() then raised a ValueError quoting the
    string (the secret); 5000 digits hit int()'s digit limit with a raw ValueError."""
    with pytest.raises(SecretError) as info:
        resolve_secret(seed)
    assert seed[:12] not in str(info.value)


@pytest.mark.parametrize("name", [None, "", 3, b"PPDM_SECRET", "A=B", "A\0B"])
def test_env_variable_name_must_be_a_variable_name(name):
    """None raised os's raw TypeError, 'A\\0B' a ValueError 'embedded null byte' (fuzz finding
    secret-from-env-name); '' and 'A=B' can name no variable."""
    with pytest.raises(SecretError, match="'name' parameter of secret_from_env"):
        ppdm.secret_from_env(name)


def test_a_secret_of_the_right_length_with_non_hex_characters_is_told_so():
    for refused in (lambda t: Secret.from_hex(t), resolve_secret):
        with pytest.raises(SecretError) as info:
            refused("0123456789abcdef0123456789abcdeZ")
        message = str(info.value)
        assert "32 characters, some of them not hex digits (0-9, a-f, A-F)" in message
        assert "Z" not in message.replace("0-9, a-f, A-F", "")


@pytest.mark.parametrize(
    "key",
    [
        b"Password123456!!",  # a phrase typed as the key
        b"polars_ppdm_2024",
        b"0123456789abcdef0123456789abcdeg",  # hex digits as bytes
        Secret.for_tests(1).key,  # a doc's public test secret, copied out as hex
        Secret.for_tests(9_999).key,
        Secret.for_tests(-3).key,
    ],
)
def test_keys_an_attacker_tries_first_are_guessable_and_refused_by_dp(monkeypatch, key):
    """Attack review 61: these passed as strong, and a DP histogram under them was
    recomputed and its noise subtracted by anyone."""
    assert Secret(key).guessable and not Secret(key).for_tests_only
    monkeypatch.setenv("PPDM_REVIEW61", key.hex())
    with pytest.raises(SecretError, match="guessable"):
        ppdm.dp_histogram(
            pl.DataFrame({"x": [1.0, 2.0]}),
            "x",
            bounds=(0, 4),
            bins=2,
            epsilon=1.0,
            secret="env:PPDM_REVIEW61",
        )


def test_random_keys_are_not_guessable():
    assert not any(Secret.generate(bits).guessable for bits in (128, 256) for _ in range(200))
