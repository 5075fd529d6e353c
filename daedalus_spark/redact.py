"""Edge support: secrets kept out of every text the controller writes — URL passwords, bearer tokens, known values."""

from __future__ import annotations

import logging
import re

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]*@")  # scheme://user:password@host
# The scheme as written in headers ("Bearer"): "the bearer token is empty" is prose, not a header.
_BEARER = re.compile(r"\b(Bearer\s+)[^\s'\",;]+")
_AUTHORIZATION = re.compile(r"(?i)\b(authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|basic|token|digest)\s+)[^\s'\",;]+")
_MASK = "***"
# A token read (agent, Prometheus) is also masked as a value standing alone (an error quoting b'<token>'), when it is
# long enough to be told from the rest of the text: masking a short one ("0") by value would garble every line it
# occurs in; such a token is masked where it is a field (Bearer, Authorization), like any other.
MIN_VALUE_MASK_CHARS = 8
_VALUE_CHARS = r"A-Za-z0-9._~+/=-"  # what a token is made of: a masked value is not part of a longer one
_known: set[str] = set()


def bearer_token(raw: str, where: str) -> str:
    """A token read from a variable or a file: surrounding whitespace (a file's trailing newline) is trimmed; a token
    with a line break or another control character inside is refused, naming where it came from, since a header
    cannot carry it (the HTTP library's error would quote the token)."""
    token = raw.strip()
    if any(not ch.isprintable() or ch.isspace() for ch in token):
        raise ValueError(f"{where}: the bearer token holds whitespace or a control character inside (one line only)")
    if len(token) >= MIN_VALUE_MASK_CHARS:
        _known.add(token)
    return token


def redact(text: str) -> str:
    """`text` with URL user info, `Bearer …` and `Authorization: …` values, and every token this process read
    (standing alone, at least MIN_VALUE_MASK_CHARS long) replaced by ***."""
    text = _USERINFO.sub(rf"\1{_MASK}@", text)
    text = _BEARER.sub(rf"\1{_MASK}", text)
    text = _AUTHORIZATION.sub(rf"\1{_MASK}", text)
    for secret in _known:
        text = re.sub(rf"(?<![{_VALUE_CHARS}]){re.escape(secret)}(?![{_VALUE_CHARS}])", _MASK, text)
    return text


class RedactingFilter(logging.Filter):
    """On a handler: every record it writes, message and traceback, goes through `redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def redact_logs() -> None:
    """Put a RedactingFilter on every handler of the root logger (once each)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
