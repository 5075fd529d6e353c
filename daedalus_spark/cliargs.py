"""Command line (edge): argument types that refuse what a person could mistype, and one-line errors."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse, but an error is one line naming the option (no usage block), and exits 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def key_value(setting: str, option: str) -> tuple[str, str]:
    """`KEY=VALUE` as (key, value), both stripped; a ValueError naming `option` and the setting when it is not one."""
    key, eq, value = setting.partition("=")
    if not eq or not key.strip():
        raise ValueError(f"{option} {setting!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def integer(lo: int, hi: int) -> Callable[[str], int]:
    """An integer in [lo, hi]: no fractions, no booleans, no huge values that would hang a loop."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside {lo}..{hi}")
        return value

    parse.__name__ = "integer"
    return parse


def number(lo: float, hi: float, *, lo_open: bool = False, whole: bool = False) -> Callable[[str], float]:
    """A finite number in [lo, hi] (or (lo, hi]): nan, inf and 1e18 are refused by name."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if value < lo or (lo_open and value == lo) or value > hi:
            bracket = "(" if lo_open else "["
            raise argparse.ArgumentTypeError(f"{value:g} is outside {bracket}{lo:g}, {hi:g}]")
        if whole and value != int(value):
            raise argparse.ArgumentTypeError(f"{value:g} is not a whole number")
        return value

    parse.__name__ = "number"
    return parse
