"""The ``ppdm`` command line.

``ppdm rules`` is the main job: disguise a basket set by randomized response, mine
association rules from the disguised baskets alone, and print them beside the rules of
the original baskets with precision, recall and F1.  The secret is never printed; only
its fingerprint is.

``ppdm secret`` makes a new secret: the one place where a secret is printed, because the
user asked for it; with ``--output FILE`` it goes into a new file of mode 0600 instead
(:func:`polars_ppdm.secret_files.write_secret_file`).

Bad input ends in one line on stderr (``ppdm rules: ...``) and exit status 2, never in a
traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import string
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from polars_ppdm import __version__
from polars_ppdm.audit.ldp import rr_epsilon
from polars_ppdm.datasets import find_shared_data, generated_baskets
from polars_ppdm.exceptions import InvalidParameterError, PPDMError
from polars_ppdm.jobs.commands import add_commands as add_pipeline_commands
from polars_ppdm.jobs.commands import guarded, one_line
from polars_ppdm.metrics.rules import rule_scores
from polars_ppdm.mine.apriori import rr_apriori
from polars_ppdm.perturb.rr import rr_disguise
from polars_ppdm.secret import Secret, resolve_secret
from polars_ppdm.secret_files import write_secret_file
from polars_ppdm.transactions import read_transactions, transactions_to_onehot

__all__ = ["compare_rules", "detect_separator", "main", "read_baskets"]

# Separators tried by detection, in this order of preference on a tie.
SEPARATORS = (",", "\t", ";", "|")
# Names a shell user can type for the separators that are awkward to quote.
_SEPARATOR_NAMES = {
    "tab": "\t",
    "\\t": "\t",
    "comma": ",",
    "semicolon": ";",
    "space": None,
    "whitespace": None,
    " ": None,
}
_ONE_ITEM_WARNING = 0.5  # warn when more than this share of the baskets hold one item


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


def detect_separator(lines: Sequence[str]) -> str | None:
    """The item separator of a basket file: of ``,`` tab ``;`` ``|``, the one found in the
    most lines (the earlier on a tie); None (whitespace) when none occurs.

    Whitespace comes last because item names hold spaces ("whole milk").

    Examples
    --------
    >>> detect_separator(["whole milk,bread", "bread"])
    ','
    >>> detect_separator(["1 2 3", "2 5"]) is None
    True
    """
    counts = {sep: sum(sep in line for line in lines) for sep in SEPARATORS}
    best = max(SEPARATORS, key=counts.__getitem__)
    return best if counts[best] else None


def _separator_name(sep: str | None) -> str:
    return "whitespace" if sep is None else {"\t": "tab"}.get(sep, repr(sep))


def _data_error(path: Path, problem: str) -> InvalidParameterError:
    return InvalidParameterError(f"--data {str(path)!r}: {problem}")


def _parquet_baskets(path: Path, sep: str | None) -> tuple[pl.DataFrame, str]:
    """Baskets from Parquet: one Boolean column per item (the form the library mines), or
    one list column of items."""
    if sep is not None:
        raise _data_error(path, "a Parquet file has no item separator; leave out --sep")
    try:
        frame = pl.read_parquet(path)
    except pl.exceptions.PolarsError as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise _data_error(path, f"a damaged Parquet file ({first})") from None
    schema = frame.schema
    if frame.width and all(dtype == pl.Boolean for dtype in schema.values()):
        nulls = [c for c in frame.columns if frame[c].null_count()]
        if nulls:
            raise _data_error(
                path, f"item columns {nulls[:5]} hold nulls; a basket holds an item or not (True/False)"
            )
        return frame, "Parquet, one Boolean column per item"
    lists = [c for c, dtype in schema.items() if isinstance(dtype, pl.List)]
    if frame.width == 1 and lists:
        return transactions_to_onehot(frame, lists[0]), "Parquet, one list column of items"
    found = ", ".join(f"{c} ({dtype})" for c, dtype in list(schema.items())[:8]) or "no columns"
    raise _data_error(
        path,
        "a Parquet file of baskets needs one Boolean column per item, or a single list column of "
        f"items; it has {found}",
    )


def read_baskets(path: str | Path, sep: str | None = None) -> tuple[pl.DataFrame, str]:
    """One-hot baskets from a file, and how it was read.

    A text file holds one basket per line, items separated by ``sep`` (None: detected by
    :func:`detect_separator`); a Parquet file (found by its magic bytes, not its name)
    holds one Boolean column per item or one list column of items.  An empty, binary or
    non-UTF-8 file, a folder, or a file without items is refused with
    :class:`~polars_ppdm.exceptions.InvalidParameterError` naming ``--data``.
    """
    path = Path(path)
    if path.is_dir():
        raise _data_error(path, "is a folder; give a basket file (one basket per line, or Parquet)")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _data_error(path, "no such file") from None
    except OSError as error:
        raise _data_error(path, f"cannot be read ({error.strerror or type(error).__name__})") from None
    if raw[:4] == b"PAR1":
        return _parquet_baskets(path, sep)
    if not raw.strip():
        raise _data_error(path, "the file is empty: no baskets to disguise")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _data_error(path, "not a text basket file (not UTF-8) and not Parquet") from None
    if "\0" in text:
        raise _data_error(path, "not a text basket file (it holds NUL bytes: binary) and not Parquet")
    lines = text.splitlines()
    how = "given"
    if sep is None:
        sep, how = detect_separator(lines), "detected"
    transactions = read_transactions(lines, sep=sep)
    sizes = transactions["items"].list.len()
    if not sizes.sum():
        raise _data_error(path, "no items in any line")
    nonempty = sizes.filter(sizes > 0)
    one_item = int((nonempty == 1).sum()) / len(nonempty)
    if one_item > _ONE_ITEM_WARNING:
        print(
            f"ppdm rules: warning: most baskets in {str(path)!r} hold a single item "
            f"when split on {_separator_name(sep)} ({how}); if the items are separated by something "
            "else, say so with --sep",
            file=sys.stderr,
        )
    return transactions_to_onehot(transactions), f"items separated by {_separator_name(sep)} ({how})"


def _load(args: argparse.Namespace) -> tuple[pl.DataFrame, str]:
    if args.generated:
        return generated_baskets(args.generated_rows), "generated baskets"
    path = args.data or find_shared_data("groceries.csv")
    if path is None:
        return (
            generated_baskets(args.generated_rows),
            "generated baskets (groceries.csv not found)",
        )
    baskets, how = read_baskets(path, args.sep)
    return baskets, f"{path}, {how}"


def _score(value: float, undefined: str) -> str:
    return f"undefined ({undefined})" if math.isnan(value) else f"{value:.3f}"


def _command_line_secret(given: str | None) -> Secret:
    """``--secret``: env:NAME, file:PATH or an integer (guessable, for demos); a literal
    hex secret is refused, since every user of the machine reads a command line (``ps``,
    ``/proc/PID/cmdline``) and the shell keeps it in its history."""
    if (
        given is not None
        and len(given.strip()) in (32, 64)
        and all(c in string.hexdigits for c in given.strip())
    ):
        msg = (
            "--secret: a secret written on the command line is visible to every user of this machine in the "
            "process list and stays in the shell's history; give --secret env:NAME (an environment variable "
            "holding it) or --secret file:PATH (a 0600 file, as `ppdm secret --output PATH` writes it)."
        )
        raise InvalidParameterError(msg)
    return resolve_secret(given)


def _rules(args: argparse.Namespace) -> int:
    secret = _command_line_secret(args.secret)
    baskets, source = _load(args)
    items = baskets.columns
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
        # An undefined score (NaN: no rules on one side or both) is null, not invalid JSON.
        report = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in report.items()}
        print(json.dumps(report, indent=2, allow_nan=False))
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
        f"precision {_score(scores['precision'], 'no rules found')}, "
        f"recall {_score(scores['recall'], 'no rules expected')}, "
        f"F1 {_score(scores['f1'], 'no rules found and none expected')}"
    )
    if not scores["true"] and not scores["found"]:
        print(
            "no rules on either side: nothing was measured. Lower --min-support or "
            "--min-confidence, or check how the data was read (the 'data' line above)."
        )
    return 0


def _kernels() -> str:
    """Which kernels serve (:mod:`polars_ppdm.kernels._native`): the same bits either way."""
    from polars_ppdm.kernels import _native

    return "compiled kernels" if _native.NATIVE is not None else "pure-Python kernels"


def _secret(args: argparse.Namespace) -> int:
    secret = Secret.generate(args.bits)
    if args.output is None:
        # The user asked for a secret: this is the one place one is printed.
        print(secret.reveal_hex())
        return 0
    try:
        write_secret_file(args.output, secret)
    except FileExistsError:
        msg = f"The 'output' file {args.output!r} already exists; a secret is never overwritten (remove it or choose another path)."
        raise FileExistsError(msg) from None
    except FileNotFoundError:
        msg = f"The 'output' file's folder {str(Path(args.output).parent)!r} does not exist."
        raise FileNotFoundError(msg) from None
    print(
        f"wrote a new {args.bits}-bit secret to {args.output} (mode 0600), fingerprint {secret.fingerprint()}"
    )
    return 0


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        msg = f"must be a number in [0, 1]; got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _at_least(low: int) -> Callable[[str], int]:
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            msg = f"must be an integer >= {low}; got {text!r}"
            raise argparse.ArgumentTypeError(msg)
        return value

    return check


def _separator(text: str) -> str | None:
    if text == "":
        msg = "must not be empty (a string, or tab, comma, semicolon, space)"
        raise argparse.ArgumentTypeError(msg)
    if text.lower() in _SEPARATOR_NAMES:
        return _SEPARATOR_NAMES[text.lower()]
    return None if text.isspace() else text  # a run of whitespace: any whitespace


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ppdm", description="Privacy-preserving data mining with Polars.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({_kernels()})")
    commands = parser.add_subparsers(dest="command", required=True)
    rules = commands.add_parser(
        "rules",
        help="disguise baskets by randomized response and mine association rules from them",
        description="Disguise a basket set, mine rules from the disguised baskets, and compare "
        "them with the rules of the original baskets.",
    )
    source = rules.add_mutually_exclusive_group()
    source.add_argument(
        "--data",
        metavar="FILE",
        help="baskets: a text file with one basket per line (groceries.csv: items separated by "
        "commas), or a Parquet file with one Boolean column per item or one list column of items "
        "(found by its content, not its name). Default: groceries.csv in ../shared/data or $PPDM_DATA, "
        "else generated baskets",
    )
    source.add_argument("--generated", action="store_true", help="use generated baskets")
    rules.add_argument(
        "--sep",
        "--separator",
        dest="sep",
        type=_separator,
        metavar="SEP",
        help="the item separator of a text --data file: a string, or tab, comma, semicolon, space "
        "(any whitespace). Default: detected -- of ',' tab ';' '|' the one found in the most "
        "lines, else whitespace; a warning says when most baskets then hold a single item",
    )
    rules.add_argument(
        "--generated-rows", type=_at_least(1), default=10_000, metavar="N", help="rows of generated baskets"
    )
    rules.add_argument("--p", type=float, default=0.9, help="keep probability of each item bit (default 0.9)")
    rules.add_argument(
        "--secret",
        help="secret: env:NAME (an environment variable holding the hex secret), file:PATH (a 0600 file "
        "from `ppdm secret --output`), or an integer (guessable; for tests); never the hex itself, which "
        "others would read in the process list. Default: fresh from the OS",
    )
    rules.add_argument(
        "--min-support", type=_fraction, default=0.02, metavar="F", help="in [0, 1] (default 0.02)"
    )
    rules.add_argument(
        "--min-confidence", type=_fraction, default=0.3, metavar="F", help="in [0, 1] (default 0.3)"
    )
    rules.add_argument(
        "--max-length", type=_at_least(1), default=4, metavar="N", help="largest itemset (default 4)"
    )
    rules.add_argument("--top", type=_at_least(0), default=25, metavar="N", help="rules to print (0: all)")
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
    add_pipeline_commands(commands)  # ppdm plan / run / ledger
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ppdm`` command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "top", None) == 0:
        args.top = None

    def run() -> int:
        try:
            return int(args.run(args))
        except (PPDMError, OSError) as error:
            if isinstance(error, BrokenPipeError):
                raise
            print(f"ppdm {args.command}: {one_line(error)}", file=sys.stderr)
            return 2

    return guarded(args.command, run)


if __name__ == "__main__":
    sys.exit(main())
