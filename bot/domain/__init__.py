"""Pure domain logic: no Slack, boto3 or Redis imports below this package."""
