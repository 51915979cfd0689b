"""gpu-bot: compare, approve, buy and track short-term GPU capacity on AWS from Slack."""

__version__ = "0.1.0"
