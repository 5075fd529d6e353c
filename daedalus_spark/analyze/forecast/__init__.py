"""Analyze: forecast the workload (paper §3.3) with auto-ARIMA, a linear fallback and WAPE-driven refits."""

from daedalus_spark.analyze.forecast.fitcache import FitCache
from daedalus_spark.analyze.forecast.fitting import FitJob, detect_period, fit_arima, fitted_arima_state
from daedalus_spark.analyze.forecast.intervals import HorizonErrors, column_quantiles
from daedalus_spark.analyze.forecast.modelmemo import ModelMemo, SharedArima
from daedalus_spark.analyze.forecast.models import (
    MODEL_LEVEL,
    NO_PARAMETER_COVARIANCE,
    ArimaModel,
    ForecastModel,
    LinearModel,
    single_threaded_blas,
)
from daedalus_spark.analyze.forecast.policy import WorkloadForecaster
from daedalus_spark.analyze.forecast.refit import FitFailed, InlineRefits, RefitScheduler, run_fit
from daedalus_spark.analyze.forecast.resample import Buckets, window_means
from daedalus_spark.analyze.forecast.scoring import holdout_wape, wape

__all__ = [
    "MODEL_LEVEL",
    "NO_PARAMETER_COVARIANCE",
    "ArimaModel",
    "Buckets",
    "FitCache",
    "FitFailed",
    "FitJob",
    "ForecastModel",
    "HorizonErrors",
    "InlineRefits",
    "LinearModel",
    "ModelMemo",
    "RefitScheduler",
    "SharedArima",
    "WorkloadForecaster",
    "column_quantiles",
    "detect_period",
    "fit_arima",
    "fitted_arima_state",
    "holdout_wape",
    "run_fit",
    "single_threaded_blas",
    "wape",
    "window_means",
]
