"""Metrics in the Prometheus format (the `Metrics` port): `prometheus` holds the
counters and the page; `files` what the gunicorn master does without importing
prometheus_client (it stays small)."""
