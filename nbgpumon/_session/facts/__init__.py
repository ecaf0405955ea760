"""What views read of a session, live or recorded: ``SessionData``, its devices and status facts."""
