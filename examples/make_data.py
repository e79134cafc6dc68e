"""Make the example pipelines' small data sets (synthetic; fixed NumPy seed).

    python examples/make_data.py            # writes examples/survey/survey.csv, examples/events/events.parquet
    python examples/make_data.py --rows-survey 100000 --rows-events 1000000 --out /tmp/ex

The files in the repository were made by the first command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent


def survey(rows: int, seed: int = 15) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, rows)
    return pl.DataFrame(
        {
            "respondent_id": np.arange(1, rows + 1),
            "name": [f"person {i}" for i in range(1, rows + 1)],
            "age": age,
            "income": np.round(rng.lognormal(10.3, 0.5, rows) + 300 * (age - 18), 2),
            "smoker": rng.random(rows) < 0.22,
            "vote": rng.choice(["green", "red", "blue", "none"], rows, p=[0.2, 0.35, 0.3, 0.15]),
            "region": rng.choice(["north", "south", "east", "west"], rows),
        }
    )


def events(rows: int, seed: int = 16) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    users = max(rows // 8, 1)
    user = rng.integers(1, users + 1, rows)
    centres = np.array([[2.0, 3.0], [7.0, 7.5], [4.0, 8.5]])
    which = rng.integers(0, 3, rows)
    xy = np.clip(centres[which] + rng.normal(0, 0.7, (rows, 2)), 0, 10)
    return pl.DataFrame(
        {
            "user_id": user,
            "ts": pl.datetime_range(
                pl.datetime(2025, 1, 1),
                pl.datetime(2025, 1, 1) + pl.duration(seconds=rows - 1),
                "1s",
                eager=True,
            ),
            "amount": np.round(np.clip(rng.gamma(2.0, 40.0, rows), 0, 500), 2),
            "x": np.round(xy[:, 0], 3),
            "y": np.round(xy[:, 1], 3),
            "channel": rng.choice(["web", "app", "store"], rows, p=[0.5, 0.35, 0.15]),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows-survey", type=int, default=1000)
    parser.add_argument("--rows-events", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=HERE, help="folder holding survey/ and events/")
    args = parser.parse_args()
    (args.out / "survey").mkdir(parents=True, exist_ok=True)
    (args.out / "events").mkdir(parents=True, exist_ok=True)
    survey(args.rows_survey).write_csv(args.out / "survey" / "survey.csv")
    events(args.rows_events).write_parquet(args.out / "events" / "events.parquet")
    print(f"wrote {args.out / 'survey' / 'survey.csv'} and {args.out / 'events' / 'events.parquet'}")


if __name__ == "__main__":
    main()
