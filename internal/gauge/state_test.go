package gauge

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestStateGaugeValuesAndNames(t *testing.T) {
	tests := []struct {
		s     State
		gauge int
		name  string
	}{
		{Closed, 0, "closed"},
		{HalfOpen, 1, "half_open"},
		{Open, 2, "open"},
		{ForcedOpen, 3, "forced_open"},
	}
	for _, tt := range tests {
		if int(tt.s) != tt.gauge {
			t.Errorf("%s gauge value = %d, want %d", tt.name, int(tt.s), tt.gauge)
		}
		if got := tt.s.String(); got != tt.name {
			t.Errorf("State(%d).String() = %q, want %q", tt.gauge, got, tt.name)
		}
		back, err := ParseState(tt.name)
		if err != nil || back != tt.s {
			t.Errorf("ParseState(%q) = %v, %v; want %v", tt.name, back, err, tt.s)
		}
	}
	if got := State(4).String(); got != "state(4)" {
		t.Errorf("State(4).String() = %q", got)
	}
	if State(4).Valid() {
		t.Error("State(4).Valid() = true")
	}
}

func TestParseStateLenient(t *testing.T) {
	tests := map[string]State{
		"Closed": Closed, " half-open ": HalfOpen, "HALF_OPEN": HalfOpen, "half open": HalfOpen,
		"half": HalfOpen, "OPEN": Open, "forced-open": ForcedOpen, "forced": ForcedOpen,
		"0": Closed, "1": HalfOpen, "2": Open, "3": ForcedOpen,
	}
	for in, want := range tests {
		got, err := ParseState(in)
		if err != nil || got != want {
			t.Errorf("ParseState(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "4", "opened", "half_closed"} {
		if _, err := ParseState(bad); !errors.Is(err, ErrUnknownState) {
			t.Errorf("ParseState(%q) error = %v, want ErrUnknownState", bad, err)
		}
	}
}

func TestStateJSONRoundTrip(t *testing.T) {
	type doc struct {
		S State `json:"state"`
	}
	for _, s := range []State{Closed, HalfOpen, Open, ForcedOpen} {
		b, err := json.Marshal(doc{s})
		if err != nil {
			t.Fatal(err)
		}
		var back doc
		if err := json.Unmarshal(b, &back); err != nil || back.S != s {
			t.Errorf("round trip of %v via %s = %v, %v", s, b, back.S, err)
		}
	}
	if _, err := json.Marshal(doc{State(9)}); err == nil {
		t.Error("marshaling State(9) succeeded")
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"state":"ajar"}`), &d); !errors.Is(err, ErrUnknownState) {
		t.Errorf("unmarshal of unknown state: %v", err)
	}
}

func TestStateRejecting(t *testing.T) {
	for s, want := range map[State]bool{Closed: false, HalfOpen: false, Open: true, ForcedOpen: true} {
		if s.Rejecting() != want {
			t.Errorf("%v.Rejecting() = %v", s, !want)
		}
	}
}
