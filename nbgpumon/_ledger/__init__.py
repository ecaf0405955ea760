"""The ledger keeps one immutable record per executed cell or tracked region."""
