"""Metrics per procedure version, from the sessions agents report, split by reason to change:
histogram (the mergeable p95 sketch), rollup (writing the daily rollup), rates (a rate with its interval, and
the drop test), reads (figures for the pages), alerts (the metric warning)."""
