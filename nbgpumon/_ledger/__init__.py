"""The ledger: one immutable record per executed cell or tracked region."""
