"""Slack listeners: parse the payload, call one service, render the result."""
