"""Configuration: the pieces every section is built from — a field with its unit, strict sections, value checks."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field


def setting(default: Any, unit: str, description: str, **bounds: Any) -> Any:
    """A config key: its default, its unit and description (the rendered YAML's comment) and its bounds."""
    return Field(default, description=description, json_schema_extra={"unit": unit}, **bounds)


@dataclass(frozen=True)
class OneOf:
    """A string field's allowed names, read when a value is checked or the YAML is rendered: for names listed above
    the configuration (the planners of plan/registry.py). Put it in the field's Annotated metadata."""

    names: Callable[[], Sequence[str]]
    what: str

    def check(self, value: str) -> str:
        names = self.names()
        if value not in names:
            raise ValueError(f"unknown {self.what} {value!r} (one of {', '.join(names)})")
        return value


class Section(BaseModel):
    """A config section: unknown keys are errors, values are frozen and never coerced."""

    # strict: `max_scaleout: true` or `"12"` is a typo to report, not a value to coerce (an int is still a float).
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)


def http_url(value: str) -> str:
    """An http(s) URL with a host: a typo here would only show as failed ticks once the loop runs."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0..65535
    except ValueError as exc:
        raise ValueError(f"not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    if "@" in parts.netloc:
        # A password here would be in every log line and error that quotes the URL: use the token settings.
        raise ValueError("a URL with user info (user:password@) is not accepted: use a bearer token setting")
    if parts.query or parts.fragment:
        part = "a query string (?…)" if parts.query else "a fragment (#…)"
        raise ValueError(f"a URL with {part} is not accepted: the path is appended to, and the rest would be lost")
    return value


LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def openable_path(value: str) -> str:
    """A file path the OS can open: no NUL byte (every open would fail) and no other control character."""
    if any(ord(ch) < 32 for ch in value):
        raise ValueError("a path must not hold a NUL byte or another control character")
    return value


MAX_SMALL_FILE_BYTES = 64 * 1024  # a token file; a CA bundle is only checked, never read here


def check_regular_file(path: str, where: str) -> None:
    """`path` can be opened for reading and is a regular file. Opened without blocking: a named pipe would hold
    the start until someone writes to it, a device is not a file to read a setting from."""
    os.close(_open_regular(path, where))


def read_small_file(path: str, where: str) -> str:
    """A regular file's UTF-8 text (at most MAX_SMALL_FILE_BYTES), read without blocking; ValueError naming `where`."""
    fd = _open_regular(path, where)
    try:
        chunks, size = [], 0
        while chunk := os.read(fd, MAX_SMALL_FILE_BYTES + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_SMALL_FILE_BYTES:
                raise ValueError(f"{where}: larger than {MAX_SMALL_FILE_BYTES // 1024} KiB")
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def _open_regular(path: str, where: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise ValueError(f"{where}: cannot read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = (
            "a named pipe"
            if stat.S_ISFIFO(mode)
            else "a directory"
            if stat.S_ISDIR(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
        raise ValueError(f"{where}: {kind}, not a file")
    return fd


DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a namespace (RFC 1123 label)
DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_KEY_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_SET_REQUIREMENT = re.compile(r"\s*(\S+)\s+(in|notin)\s+\(([^()]*)\)\s*")
_EQUALITY_REQUIREMENT = re.compile(r"\s*(!?)([^=!\s]+)\s*(?:(==|=|!=)\s*(\S*)\s*)?")


def _label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return bool(_LABEL_KEY_NAME.fullmatch(name)) and (not prefix or bool(DNS_SUBDOMAIN.fullmatch(prefix)))


def label_selector(value: str) -> str:
    """A Kubernetes label selector as the API server parses it: key, !key, key=value, key==value, key!=value,
    key in (a,b), key notin (a,b), separated by commas; keys and values by the label rules."""
    for requirement in re.split(r",(?![^()]*\))", value):
        if m := _SET_REQUIREMENT.fullmatch(requirement):
            key, values = m.group(1), [v.strip() for v in m.group(3).split(",")]
        elif (m := _EQUALITY_REQUIREMENT.fullmatch(requirement)) and not (m.group(1) and m.group(3)):
            key, values = m.group(2), [] if m.group(4) is None else [m.group(4)]
        else:
            raise ValueError(f"{requirement.strip()!r} is not a label selector requirement")
        if not _label_key(key):
            raise ValueError(f"{key!r} is not a label key (letters, digits, '-', '_', '.'; at most 63)")
        if bad := [v for v in values if not _LABEL_VALUE.fullmatch(v)]:
            raise ValueError(f"{bad[0]!r} is not a label value (letters, digits, '-', '_', '.'; at most 63)")
    return value


def dns_name(pattern: re.Pattern[str], what: str) -> Any:
    def check(value: str) -> str:
        if value and not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not a valid Kubernetes {what} (lower-case letters, digits and '-')")
        return value

    return check
