package exitcode

// Exit codes, documented in docs/exit-codes.md. Scripts may rely on them.
const (
	OK           = 0   // success, including "already done"
	Error        = 1   // an unexpected failure, or a check that did not pass
	Usage        = 2   // bad flags, arguments or input; nothing was done
	NotFound     = 3   // the named thing does not exist
	Conflict     = 4   // someone else holds it or changed it; nothing was done
	Unavailable  = 5   // the store or an AWS service could not be reached, throttled, or the table is missing
	Auth         = 6   // credentials missing, expired or denied
	Refused      = 7   // a protected context needs confirmation (--yes) or it was declined; a safety check needs --force
	Unknown      = 8   // a change was sent and the store could not be reached to settle it: its outcome is unknown (check with the get command named); or an action outside the table (chaos sign, key rotate) could not be recorded
	Rollback     = 9   // a drill's rollback failed or was abandoned: a lever may still be pulled
	Partial      = 10  // a list showed what it could read; some stored items could not be read in full (each one reported)
	Unconfirmed  = 11  // the change was made, but the fleet's gauges did not confirm it within --timeout (stragglers named)
	Pending      = 12  // the table's policy needs approvals: a change request was made and nothing was changed yet
	Closed       = 13  // the change request expired, or was denied or canceled: it can never be applied
	Mismatch     = 14  // the change request does not match its hash (edited after it was made, or not the one reviewed): never applied
	RolledBack   = 15  // a bake saw the fleet fail after a clear and put the override back (--bake)
	PartialWrite = 16  // a change asked in chunks (--chunked, clear --all) wrote some levers and not others: each chunk is whole, and every lever is listed with what became of it
	Interrupted  = 130 // interrupted (SIGINT)
)
