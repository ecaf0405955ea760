"""The session: sources, sampler, timeline, ledger, forensics and recorder of one kernel,
assembled; its settings."""
