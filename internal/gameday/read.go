package gameday

import (
	"fmt"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/kosha-platform/koshactl/internal/drill"
)

// The report's bounds: a journal at its cap (64 MiB) renders in a few MiB of
// HTML, whatever it holds.
const (
	// maxText is how much of one value a table or line shows (in bytes,
	// cut at a character); a longer one is folded: cut, with how much more
	// the journal holds.
	maxText = 1000
	// maxTitle is how much of one value a chart's tooltip shows.
	maxTitle = 200
	// foldSlack is more than a fold's note takes: a folded text is never
	// folded again, so its note keeps the journal's count.
	foldSlack = 64
	// maxRows is how many rows a table, or a section of the timeline,
	// shows; the rest are counted ("… and 1,234 more steps").
	maxRows = 100
	// maxStopRows is how many stop conditions the timeline draws (each
	// row holds up to a mark per column of each kind).
	maxStopRows = 10
	// maxGaugeRows is how many instances' strips the breaker_state chart
	// draws, all dependencies together (each strip holds up to a bar per
	// column).
	maxGaugeRows = 48
	// maxOutputs is how many outputs of one step the steps table lists.
	maxOutputs = 20
)

// fold is s cut to about n bytes (at a character) with a note of how much
// the journal holds beyond, when s is longer than n and the note.
func fold(s string, n int) string {
	if len(s) <= n+foldSlack {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [%d more bytes in the journal]", s[:cut], len(s)-cut)
}

// ReadJournal reads the journal at path for a report, as a stream
// ([drill.StreamJournal]): each text longer than the report shows is
// folded as it is read, a step's progress log (which no report shows) is
// dropped, and the names the gauge reads and stop evaluations repeat are
// held once. A journal at its cap is held in about its own size, where
// reading it whole took ten times that.
func ReadJournal(path string) (*drill.Journal, error) {
	names := map[string]string{}
	intern := func(s *string) {
		if v, ok := names[*s]; ok {
			*s = v
			return
		}
		*s = fold(*s, maxText)
		names[*s] = *s
	}
	// last is the instances of each dependency's last read: a read that
	// found them in the same states (most of a soak's) shares its list.
	last := map[string][]drill.InstanceSample{}
	j, err := drill.StreamJournal(path, func(elem any) bool {
		switch e := elem.(type) {
		case *drill.GaugeSample:
			intern(&e.Dependency)
			intern(&e.Error)
			if prev, ok := last[e.Dependency]; ok && slices.Equal(prev, e.Instances) {
				e.Instances = prev
				return true
			}
			for i := range e.Instances {
				intern(&e.Instances[i].Instance)
				intern(&e.Instances[i].State)
			}
			last[e.Dependency] = e.Instances
			return true
		case *drill.StopEvaluation:
			intern(&e.Condition)
			intern(&e.Detail)
			intern(&e.Error)
			return true
		case *drill.StepRecord:
			e.Log = nil
		}
		foldStrings(reflect.ValueOf(elem).Elem())
		return true
	})
	if err != nil {
		return nil, err
	}
	foldStrings(reflect.ValueOf(j).Elem()) // the run's own fields: its reason, stop, guard
	return j, nil
}

// foldStrings folds every string held in v (fields, lists, map values,
// through pointers) to [maxText].
func foldStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(fold(v.String(), maxText))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			foldStrings(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				foldStrings(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			foldStrings(v.Index(i))
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.String {
			for _, k := range v.MapKeys() {
				v.SetMapIndex(k, reflect.ValueOf(fold(v.MapIndex(k).String(), maxText)).Convert(v.Type().Elem()))
			}
		}
	default: // numbers, booleans, times' innards: no text to fold
	}
}
