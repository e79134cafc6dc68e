"""Progress of a run: a live display on a terminal (rows done of rows total per step,
with an ETA, drawn by rich on stderr), nothing at all elsewhere; the command prints one
summary line at the end (unless ``--quiet``).

No progress line holds a value of the data or the secret: only step labels and counts.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import IO, Any

__all__ = ["Progress", "make_progress"]


class Progress:
    """Silent progress: the interface, used when not on a terminal or with ``--quiet``."""

    active = False

    def start(self, label: str, total: int | None) -> Callable[[int], None]:
        """Begin a step of ``total`` rows (None: unknown); returns ``advance(rows)``."""
        return lambda rows: None

    def done(self, label: str) -> None:
        """The step ``label`` has finished."""

    def close(self) -> None:
        """Stop drawing."""


class _RichProgress(Progress):
    active = True

    def __init__(self, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import (
            Progress as RichBar,
        )

        self._bar = RichBar(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("rows"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self._bar.start()
        self._tasks: dict[str, Any] = {}
        self._lock = threading.Lock()  # Polars calls the counter from its threads

    def start(self, label: str, total: int | None) -> Callable[[int], None]:
        from rich.markup import escape

        task = self._bar.add_task(escape(label), total=total)  # "[[release]]" is not markup
        self._tasks[label] = task

        def advance(rows: int) -> None:
            with self._lock:
                self._bar.advance(task, rows)

        return advance

    def done(self, label: str) -> None:
        task = self._tasks.get(label)
        if task is not None:
            with self._lock:
                found = self._bar.tasks[task]
                self._bar.update(
                    task,
                    total=found.completed or found.total or 1,
                    completed=found.completed or found.total or 1,
                )

    def close(self) -> None:
        self._bar.stop()


def make_progress(*, quiet: bool = False, stream: IO[str] | None = None, force: bool = False) -> Progress:
    """Rich progress on ``stream`` (stderr) when it is a terminal (or ``force``), else silent."""
    stream = sys.stderr if stream is None else stream
    if quiet or not (force or stream.isatty()):
        return Progress()
    return _RichProgress(stream)
