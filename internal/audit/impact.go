package audit

import "time"

// Impact is what a lever change of one dependency did to the platform's
// tools as koshactl saw it when it wrote the record: the tools the
// degradation matrix says the dependency's override changes, and the call
// rates read from the context's metrics source at the time
// (docs/contracts/audit-record.md, "The impact attribute"). A force's
// record says what the override starts; a clear's what it ends.
type Impact struct {
	// Dependency is the dependency forced or cleared.
	Dependency string `json:"dependency"`
	// Obeyed is false for an override no instance reads (a dependency the
	// data plane has no breaker on): it changes no tool.
	Obeyed bool `json:"obeyed"`
	// Tools are the tools whose behaviour the override changes, with their
	// call rates then.
	Tools []ToolRate `json:"tools"`
	// CallsPerMinute is the dependency's own call rate then (nil: not
	// read, or no series of it).
	CallsPerMinute *float64 `json:"calls_per_minute,omitempty"`
	// RatesSource is where the rates were read ("": no source was asked);
	// RatesError why they could not be (the rates are then absent).
	RatesSource string `json:"rates_source,omitempty"`
	RatesError  string `json:"rates_error,omitempty"`
	// ReadAt is when the rates were read; WindowSeconds the span they are
	// averaged over.
	ReadAt        time.Time `json:"read_at,omitzero"`
	WindowSeconds float64   `json:"window_seconds,omitempty"`
}

// ToolRate is one tool's behaviour while the override holds, and its call
// rate when the record was written.
type ToolRate struct {
	Tool string `json:"tool"`
	// Behaviour is degraded, deferred, failed or unaffected.
	Behaviour string `json:"behaviour"`
	// CallsPerMinute is the tool's call rate then (nil: not read).
	CallsPerMinute *float64 `json:"calls_per_minute,omitempty"`
}
