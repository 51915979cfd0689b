"""Adapters to the outside world (AWS, Redis, Slack, time), each behind a small interface."""
