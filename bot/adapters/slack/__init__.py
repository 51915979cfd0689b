"""Slack Web API adapters: a retrying client, the notifier, user group lookups."""
