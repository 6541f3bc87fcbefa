package audit

// WithIDs returns a copy of l whose records take their ids from ids.
func WithIDs(l *Log, ids func() (string, error)) *Log {
	c := *l
	c.ids = ids
	return &c
}
