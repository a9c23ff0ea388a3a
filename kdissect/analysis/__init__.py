"""Tables -> figures: the summary's latency percentiles, status and error counts, and the filter
language over exchange rows.

Rule: reads columns (never events or bytes) and never prints; ``report`` renders what it computes.
"""

from kdissect.analysis.filters import FilterError, compile_filter
from kdissect.analysis.summary import AnomalyFigures, ApiFigures, Summary, quantile, summarize

__all__ = ["AnomalyFigures", "ApiFigures", "FilterError", "Summary", "compile_filter", "quantile", "summarize"]
