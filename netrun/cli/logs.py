"""The run's debug log (netrun.log in the results folder): passwords redacted, silent
when the disk is full, third-party chatter kept to warnings."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from netrun.errors import redact


class RedactingFilter(logging.Filter):
    """Keeps passwords out of the debug log, whatever a library logs."""

    def __init__(self, secrets: Sequence[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            record.msg = redact(record.getMessage(), self.secrets)
            record.args = None
        return True


class LogFile(logging.FileHandler):
    """The debug log, silent when the disk is full.

    logging's default prints a traceback per failed record; the results folder already
    reports the write failure once, as one line.
    """

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def setup_log(path: Path, secrets: Sequence[str]) -> None:
    try:
        handler = LogFile(path, encoding="utf-8")
    except OSError:  # no log rather than no run; the results folder reports the failure
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    for noisy in ("paramiko", "invoke", "fabric", "urllib3", "docker"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
