"""Runtime: the sidecar's logging — readable lines or one JSON object per line, the scheduler's per-tick chatter off."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal, TextIO

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# APScheduler logs "Running job ..." and "... executed successfully" at INFO on every tick; its warnings (a missed
# run, a job still running) and errors still come through.
QUIET_LOGGERS = ("apscheduler.executors",)


# A record's structured fields (`extra={FIELDS: {...}}`): keys of their own in a JSON line, for a log pipeline to
# filter on (a decision's scale-outs, reason and outcome), and nothing more in a text line.
FIELDS = "fields"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (ISO 8601, UTC), level, logger, message, the record's structured fields, and
    the traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, FIELDS, None)
        if isinstance(fields, dict):
            entry.update({key: value for key, value in fields.items() if key not in entry})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, log_format: Literal["text", "json"], *, stream: TextIO | None = None) -> None:
    """Replace the root logger's handlers with one that writes `log_format` to stderr (or `stream`)."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
