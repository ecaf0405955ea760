"""The session assembles one kernel's sources, sampler, timeline, ledger, forensics and recorder;
its settings are here too."""
