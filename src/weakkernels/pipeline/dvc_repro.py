"""``python -m weakkernels.pipeline.dvc_repro [ARGS]``: ``dvc repro [ARGS]``
without DVC's echo of each stage's command line.

``make repro`` runs it.  DVC prints, per stage, ``Running stage '<name>':``,
then ``> <the stage's cmd>`` (one long line that repeats ``dvc.yaml``), and a
blank line between two stages; the last two are dropped (:data:`DROPPED`), so
a reproduction shows one header per stage and the stages' own lines.  Kept:
every DVC warning and error, ``Updating lock file`` (the run changed
``dvc.lock``, i.e. did not reproduce it) and DVC's git hints.  ``dvc repro
--quiet`` is not the same: it sets DVC's loggers to CRITICAL, which hides
DVC's own error messages (a missing dependency, a failed stage's name)
too.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

__all__ = ["DROPPED", "main"]


def _command_echo(record: logging.LogRecord) -> bool:
    return record.msg == "%s %s" and bool(record.args) and record.args[0] == ">"


def _blank(record: logging.LogRecord) -> bool:
    return record.msg == ""


# DVC logger -> which of its INFO records are dropped
DROPPED: dict[str, Callable[[logging.LogRecord], bool]] = {
    "dvc.stage.run": _command_echo,
    "dvc.repo.reproduce": _blank,
}


class _Drop(logging.Filter):
    def __init__(self, test: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__()
        self._test = test

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not self._test(record)


def main(argv: list[str] | None = None) -> int:
    from dvc.cli import main as dvc_main

    for name, test in DROPPED.items():
        logging.getLogger(name).addFilter(_Drop(test))
    return dvc_main(["repro", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
