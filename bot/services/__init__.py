"""One module per flow: quoting, approvals, purchasing. Services know adapters only
through small interfaces, and return domain objects."""
