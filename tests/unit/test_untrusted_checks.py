"""untrusted.py on pydantic: each stored value refused with one line naming where it was and what is wrong."""

from __future__ import annotations

import math
from typing import Any

import pytest

from daedalus_spark.analyze.stats import ExponentialMoments, OnlineRegression
from daedalus_spark.untrusted import Damaged, boolean, integer, mapping, number, numbers, text

CHECKS = [
    ("int-bool", lambda: integer(True, "w", lo=0, hi=9), "w: expected an integer, got True"),
    ("int-string", lambda: integer("4", "w", lo=0, hi=9), "w: expected an integer, got '4'"),
    ("int-float", lambda: integer(4.0, "w", lo=0, hi=9), "w: expected an integer, got 4.0"),
    ("int-range", lambda: integer(10, "w", lo=0, hi=9), "w: 10 outside [0, 9]"),
    ("number-bool", lambda: number(False, "w"), "w: expected a number, got False"),
    ("number-nan", lambda: number(math.nan, "w"), "w: nan is not a finite number"),
    ("number-inf", lambda: number(math.inf, "w", lo=0.0), "w: inf is not a finite number"),
    ("number-nan-inf-allowed", lambda: number(math.nan, "w", lo=0.0, allow_inf=True), "w: nan is not a finite number"),
    ("number-range", lambda: number(-1, "w", lo=0.0, hi=1.0), "w: -1.0 outside [0.0, 1.0]"),
    ("boolean", lambda: boolean(1, "w"), "w: expected true or false, got 1"),
    ("text-long", lambda: text("abc", "w", max_len=2), "w: expected a string of at most 2 characters, got 'abc'"),
    ("numbers-tuple", lambda: numbers((1.0,), "w", max_len=3), "w: expected a list of at most 3 numbers"),
    ("numbers-item", lambda: numbers([1.0, "x"], "w", max_len=3), "w[1]: expected a number, got 'x'"),
    ("mapping", lambda: mapping([1], "w"), "w: expected an object, got list"),
]


@pytest.mark.parametrize(("check", "message"), [c[1:] for c in CHECKS], ids=[c[0] for c in CHECKS])
def test_a_damaged_value_is_named_with_what_is_wrong(check: Any, message: str) -> None:
    with pytest.raises(Damaged) as err:
        check()
    assert str(err.value) == message


def test_values_that_pass_come_back_as_their_type() -> None:
    assert integer(4, "w", lo=0, hi=9) == 4
    assert type(number(3, "w")) is float and number(math.inf, "w", allow_inf=True) == math.inf
    assert boolean(False, "w") is False and text("ab", "w") == "ab" and numbers([1, 2.5], "w", max_len=2) == [1.0, 2.5]


REGRESSION = {"n": 3, "mean_x": 1.0, "mean_y": 2.0, "m2_x": 0.5, "m2_y": 1.0, "c_xy": 0.1}
RECORDS = [
    ("missing", {k: v for k, v in REGRESSION.items() if k != "c_xy"}, "reg.c_xy: missing"),
    ("count-as-text", {**REGRESSION, "n": "3"}, "reg.n: expected an integer, got '3'"),
    ("count-negative", {**REGRESSION, "n": -1}, "reg.n: -1 outside [0, 9007199254740992]"),
    ("nan", {**REGRESSION, "mean_y": math.nan}, "reg.mean_y: nan is not a finite number"),
    ("negative-squares", {**REGRESSION, "m2_x": -1}, "reg.m2_x: -1.0 outside [0.0, inf]"),
    ("not-an-object", [1, 2], "reg: expected an object, got list"),
]


@pytest.mark.parametrize(("raw", "message"), [c[1:] for c in RECORDS], ids=[c[0] for c in RECORDS])
def test_a_damaged_stored_record_names_its_field(raw: Any, message: str) -> None:
    with pytest.raises(Damaged) as err:
        OnlineRegression.from_state(raw, "reg")
    assert str(err.value) == message


def test_stored_records_round_trip_and_ignore_keys_a_newer_writer_added() -> None:
    reg = OnlineRegression()
    for x, y in ((0.1, 10.0), (0.4, 31.0), (0.9, 88.0)):
        reg.update(x, y)
    assert OnlineRegression.from_state({**reg.to_state(), "added_later": 1}, "reg") == reg
    moments = ExponentialMoments(alpha=0.2, n=4, mean=3.0, var=1.5)
    assert ExponentialMoments.from_state({**moments.__dict__}, "m") == moments
    with pytest.raises(Damaged, match=r"m\.alpha: 1\.5 outside \[0\.0, 1\.0\]"):
        ExponentialMoments.from_state({**moments.__dict__, "alpha": 1.5}, "m")
