"""Analyze: Welford-style online statistics (mean, variance, covariance, simple regression) in constant memory."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import Field
from scipy.stats import t as student_t

from daedalus_spark.untrusted import Damaged, StoredRecord, record


class _StoredRegression(StoredRecord):
    n: int = Field(ge=0, le=2**53)
    mean_x: float
    mean_y: float
    m2_x: float = Field(ge=0.0)  # a negative sum of squares would reach a division in a later tick
    m2_y: float = Field(ge=0.0)
    c_xy: float


class _StoredMoments(StoredRecord):
    alpha: float = Field(ge=0.0, le=1.0)
    n: int = Field(ge=0, le=2**53)
    mean: float
    var: float = Field(ge=0.0)


@functools.lru_cache(maxsize=256)
def _t_quantile(confidence: float, dof: int) -> float:
    """Student's t quantile, once per (confidence, degrees of freedom): a batch line's rate bisects on the bound."""
    return float(student_t.ppf(confidence, dof))


@dataclass
class OnlineRegression:
    """Online simple linear regression y = intercept + slope * x from running means, variance and covariance."""

    n: int = 0
    mean_x: float = 0.0
    mean_y: float = 0.0
    m2_x: float = 0.0  # sum of squared deviations of x
    m2_y: float = 0.0
    c_xy: float = 0.0  # co-moment: sum of (x - mean_x)(y - mean_y)

    def update(self, x: float, y: float) -> None:
        self.update_all(((x, y),))

    def update_all(self, points: Sequence[tuple[float, float]]) -> None:
        """Welford's update with each (x, y) in order, on local copies of the moments (without six attribute updates
        a point: the capacity model feeds every executor's samples each tick)."""
        n, mean_x, mean_y, m2_x, m2_y, c_xy = self.n, self.mean_x, self.mean_y, self.m2_x, self.m2_y, self.c_xy
        for x, y in points:
            n += 1
            dx = x - mean_x
            dy = y - mean_y
            mean_x += dx / n
            mean_y += dy / n
            m2_x += dx * (x - mean_x)
            m2_y += dy * (y - mean_y)
            c_xy += dx * (y - mean_y)
        self.n, self.mean_x, self.mean_y, self.m2_x, self.m2_y, self.c_xy = n, mean_x, mean_y, m2_x, m2_y, c_xy

    def variance_x(self, ddof: int = 0) -> float:
        return self.m2_x / (self.n - ddof) if self.n > ddof else 0.0

    def covariance(self, ddof: int = 0) -> float:
        return self.c_xy / (self.n - ddof) if self.n > ddof else 0.0

    @property
    def correlation(self) -> float:
        """Pearson's r; 0 without spread in either variable."""
        denominator = math.sqrt(self.m2_x * self.m2_y)
        return self.c_xy / denominator if denominator > 0 else 0.0

    @property
    def slope(self) -> float:
        return self.c_xy / self.m2_x if self.m2_x > 0 else 0.0

    @property
    def intercept(self) -> float:
        return self.mean_y - self.slope * self.mean_x

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x

    def residual_sd(self) -> float:
        """The residuals' standard deviation about the line, with n - 2 degrees of freedom (0 with fewer than 3)."""
        if self.n < 3 or self.m2_x <= 0:
            return 0.0
        return math.sqrt(max(self.m2_y - self.c_xy * self.c_xy / self.m2_x, 0.0) / (self.n - 2))

    def mean_upper_bound(self, x: float, confidence: float) -> float:
        """One-sided upper confidence bound of the line's mean at `x` (Student's t with n - 2 degrees of freedom):
        it widens with the residuals and with the distance of `x` from the points seen. The line itself with fewer
        than 3 points."""
        sd = self.residual_sd()
        if sd <= 0:
            return self.predict(x)
        t = _t_quantile(confidence, self.n - 2)
        return self.predict(x) + t * sd * math.sqrt(1.0 / self.n + (x - self.mean_x) ** 2 / self.m2_x)

    def to_state(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_state(cls, raw: Any, where: str) -> OnlineRegression:
        """Stored Welford moments; NaN or a negative sum of squares would reach a division in a later tick."""
        reg = cls(**record(_StoredRegression, raw, where).model_dump())
        # Cauchy-Schwarz: |c_xy| <= sqrt(m2_x m2_y); beyond rounding the moments were not accumulated by us.
        if abs(reg.c_xy) > math.sqrt(reg.m2_x * reg.m2_y) * (1 + 1e-6) + 1e-9:
            raise Damaged(f"{where}: co-moment larger than the variances allow")
        return reg


@dataclass
class ExponentialMoments:
    """Exponentially weighted running mean and variance: recent behaviour counts, old regimes fade out.

    Same one-pass update as Welford's, with weight `alpha` on the newest sample (West, 1979).
    """

    alpha: float
    n: int = 0
    mean: float = 0.0
    var: float = 0.0

    def update(self, x: float) -> None:
        self.n += 1
        if self.n == 1:
            self.mean, self.var = x, 0.0
            return
        delta = x - self.mean
        self.mean += self.alpha * delta
        self.var = (1 - self.alpha) * (self.var + self.alpha * delta * delta)

    def stddev(self) -> float:
        return math.sqrt(self.var)

    def to_state(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_state(cls, raw: Any, where: str) -> ExponentialMoments:
        return cls(**record(_StoredMoments, raw, where).model_dump())
