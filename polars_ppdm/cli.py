"""The ``ppdm`` command line.

``ppdm rules`` is the main job: disguise a basket set by randomized response, mine
association rules from the disguised baskets alone, and print them beside the rules of
the original baskets with precision, recall and F1.  The secret is never printed; only
its fingerprint is.

``ppdm secret`` makes a new secret: the one place where a secret is printed, because the
user asked for it; with ``--output FILE`` it goes into a new file of mode 0600 instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from polars_ppdm import __version__
from polars_ppdm.audit.ldp import rr_epsilon
from polars_ppdm.datasets import find_shared_data, generated_baskets, groceries
from polars_ppdm.exceptions import PPDMError
from polars_ppdm.metrics.rules import rule_scores
from polars_ppdm.mine.apriori import rr_apriori
from polars_ppdm.perturb.rr import rr_disguise
from polars_ppdm.secret import Secret, resolve_secret

__all__ = ["compare_rules", "main", "write_secret_file"]


def _rule_text(items: pl.Expr) -> pl.Expr:
    return items.list.sort().list.join(", ")


def compare_rules(found: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """The rules of both sets side by side, with ``status`` found / missed / spurious.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"antecedent": [["a"]], "consequent": [["b"]], "support": [0.3], "confidence": [0.6]})
    >>> f = pl.DataFrame({"antecedent": [["c"]], "consequent": [["b"]], "support": [0.2], "confidence": [0.5]})
    >>> compare_rules(f, t).select("rule", "status").rows()
    [('a => b', 'missed'), ('c => b', 'spurious')]
    """

    def keyed(rules: pl.DataFrame, suffix: str) -> pl.DataFrame:
        return rules.select(
            rule=pl.format("{} => {}", _rule_text(pl.col("antecedent")), _rule_text(pl.col("consequent"))),
            **{f"support_{suffix}": "support", f"confidence_{suffix}": "confidence"},
        )

    both = keyed(truth, "true").join(keyed(found, "disguised"), on="rule", how="full", coalesce=True)
    status = (
        pl.when(pl.col("support_true").is_null())
        .then(pl.lit("spurious"))
        .when(pl.col("support_disguised").is_null())
        .then(pl.lit("missed"))
        .otherwise(pl.lit("found"))
    )
    return both.with_columns(status=status).sort(
        pl.coalesce("confidence_true", "confidence_disguised"), "rule", descending=[True, False]
    )


def _load(args: argparse.Namespace) -> tuple[pl.DataFrame, str]:
    if args.generated:
        return generated_baskets(args.generated_rows), "generated baskets"
    path = args.data or find_shared_data("groceries.csv")
    if path is None:
        return (
            generated_baskets(args.generated_rows),
            "generated baskets (groceries.csv not found)",
        )
    return groceries(path), str(path)


def _rules(args: argparse.Namespace) -> int:
    baskets, source = _load(args)
    items = baskets.columns
    secret = resolve_secret(args.secret)
    settings = dict(
        min_support=args.min_support, min_confidence=args.min_confidence, max_length=args.max_length
    )

    started = time.perf_counter()
    disguised = rr_disguise(baskets, items, p=args.p, secret=secret)
    disguise_seconds = time.perf_counter() - started
    started = time.perf_counter()
    found = rr_apriori(disguised, items, p=args.p, **settings)
    mine_seconds = time.perf_counter() - started
    truth = rr_apriori(baskets, items, p=1.0, **settings)
    scores = rule_scores(found, truth)
    table = compare_rules(found, truth)
    epsilon = rr_epsilon(args.p, 2)

    if args.json:
        report = {
            "source": source,
            "rows": baskets.height,
            "items": len(items),
            "p": args.p,
            "epsilon_per_item": epsilon,
            "secret_fingerprint": secret.fingerprint(),
            **settings,
            **scores,
            "rules": table.to_dicts(),
        }
        print(json.dumps(report, indent=2))
        return 0

    print(f"data      {source}: {baskets.height:,} baskets, {len(items)} items")
    print(
        f"disguise  per-item randomized response, p = {args.p} (epsilon {epsilon:.3f} per item column; "
        f"a basket's {len(items)} columns add up to {epsilon * len(items):.1f})"
    )
    print(
        f"secret    fingerprint {secret.fingerprint()}{' (guessable integer secret)' if secret.guessable else ''}"
    )
    print(f"time      disguise {disguise_seconds:.2f} s, mining the disguised baskets {mine_seconds:.2f} s")
    print(
        f"rules     min support {args.min_support}, min confidence {args.min_confidence}, "
        f"itemsets up to {args.max_length}"
    )
    shown = table if args.top is None else table.head(args.top)
    with pl.Config(
        tbl_rows=-1, tbl_width_chars=140, fmt_str_lengths=60, tbl_hide_dataframe_shape=True, float_precision=3
    ):
        print(shown)
    if args.top is not None and table.height > args.top:
        print(f"... {table.height - args.top} more rules (--top 0 shows all)")
    print(
        f"original {scores['true']} rules, disguised {scores['found']} rules: "
        f"precision {scores['precision']:.3f}, recall {scores['recall']:.3f}, F1 {scores['f1']:.3f}"
    )
    return 0


def write_secret_file(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to a new file of mode 0600, atomically; never overwrite.

    The text goes to a temporary file in the same folder (created 0600 by
    :func:`tempfile.mkstemp`), is flushed to disk, and is then hard-linked to ``path``,
    which fails if ``path`` exists: no reader ever sees a partial file, and an existing
    secret is never replaced.  On a file system without hard links the file is created
    with ``O_EXCL`` instead (still never an overwrite, but no longer all-or-nothing).

    Raises
    ------
    FileExistsError
        When ``path`` exists.

    Examples
    --------
    >>> import os, stat, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> target = os.path.join(folder, "secret")
    >>> write_secret_file(target, "00" * 16 + "\\n")
    >>> oct(stat.S_IMODE(os.stat(target).st_mode))
    '0o600'
    >>> write_secret_file(target, "11" * 16 + "\\n")
    Traceback (most recent call last):
    ...
    FileExistsError: ...
    """
    target = Path(path)
    if target.exists() or target.is_symlink():
        raise FileExistsError(_exists_message(target))
    if not target.parent.is_dir():
        msg = f"The 'output' file's folder {str(target.parent)!r} does not exist."
        raise FileNotFoundError(msg)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise FileExistsError(_exists_message(target)) from None
        except OSError:
            # No hard links here (some network or FAT file systems): exclusive create.
            _write_exclusive(target, text)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _exists_message(target: Path) -> str:
    return f"The 'output' file {str(target)!r} already exists; a secret is never overwritten (remove it or choose another path)."


def _write_exclusive(target: Path, text: str) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise FileExistsError(_exists_message(target)) from None
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())


def _secret(args: argparse.Namespace) -> int:
    secret = Secret.generate(args.bits)
    if args.output is None:
        # The user asked for a secret: this is the one place one is printed.
        print(secret.reveal_hex())
        return 0
    write_secret_file(args.output, secret.reveal_hex() + "\n")
    print(
        f"wrote a new {args.bits}-bit secret to {args.output} (mode 0600), fingerprint {secret.fingerprint()}"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ppdm", description="Privacy-preserving data mining with Polars.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    rules = commands.add_parser(
        "rules",
        help="disguise baskets by randomized response and mine association rules from them",
        description="Disguise a basket set, mine rules from the disguised baskets, and compare "
        "them with the rules of the original baskets.",
    )
    rules.add_argument("--data", help="groceries-style CSV (one basket per line); default ../shared/data")
    rules.add_argument("--generated", action="store_true", help="use generated baskets")
    rules.add_argument("--generated-rows", type=int, default=10_000, help="rows of generated baskets")
    rules.add_argument("--p", type=float, default=0.9, help="keep probability of each item bit (default 0.9)")
    rules.add_argument(
        "--secret",
        help="secret: hex (128/256 bits), env:NAME, or an integer (guessable; for tests). "
        "Default: fresh from the OS",
    )
    rules.add_argument("--min-support", type=float, default=0.02)
    rules.add_argument("--min-confidence", type=float, default=0.3)
    rules.add_argument("--max-length", type=int, default=4)
    rules.add_argument("--top", type=int, default=25, help="rules to print (0: all)")
    rules.add_argument("--json", action="store_true", help="print a JSON report instead of tables")
    rules.set_defaults(run=_rules)

    secret = commands.add_parser(
        "secret",
        help="make a new random secret (hex) for --secret, PPDM_SECRET or a secret file",
        description="Make a new secret from the operating system's random source and print it as hex, "
        "or write it to a new file of mode 0600 with --output. Treat it as a password.",
    )
    secret.add_argument(
        "--bits", type=int, choices=(128, 256), default=256, help="secret length in bits (default 256)"
    )
    secret.add_argument(
        "--output",
        metavar="FILE",
        help="write the secret to FILE (created with mode 0600; never overwritten) instead of printing it",
    )
    secret.set_defaults(run=_secret)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ppdm`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "top", None) == 0:
        args.top = None
    try:
        return args.run(args)
    except (PPDMError, OSError) as error:
        print(f"ppdm {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
