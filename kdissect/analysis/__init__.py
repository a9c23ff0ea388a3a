"""Tables -> figures: the summary's latency percentiles, status and error counts, the filter
language over exchange rows, and the report's figures (latency, errors, groups, lag, transactions,
topology, clients, throughput, time series: one module each, over the tables as DataFrames).

Rule: reads columns (never events or bytes) and never prints; ``report`` renders what it computes.
"""

from kdissect.analysis.filters import FilterError, compile_filter
from kdissect.analysis.latency import Percentiles, percentiles
from kdissect.analysis.summary import AnomalyFigures, ApiFigures, ErrorFigures, Summary, summarize

__all__ = [
    "AnomalyFigures",
    "ApiFigures",
    "ErrorFigures",
    "FilterError",
    "Percentiles",
    "Summary",
    "compile_filter",
    "percentiles",
    "summarize",
]
