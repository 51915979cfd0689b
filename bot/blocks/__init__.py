"""Block Kit builders: pure functions from domain objects to blocks (lists of dicts)."""
