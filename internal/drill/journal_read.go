package drill

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/kosha-platform/koshactl/internal/fsutil"
)

// maxJournalSize bounds the journal file read.
const maxJournalSize = 64 << 20

// StreamJournal reads the journal at path as a stream, never holding more
// of the file than one element of a list: the elements of the journal's
// lists (preflight, the hypothesis's before and after, steps, rollbacks,
// notices, recoveries, gauge_samples, stop_evaluations, audit) are decoded
// one at a time and handed to keep, as a pointer (*StepRecord, *string of
// a notice...). keep may change the element (fold a long text) and says
// whether the returned Journal holds it; a nil keep keeps every element.
// The other fields are decoded whole. A file that is not a regular file,
// is longer than the journal's cap, is not a journal or is of a later
// version than this koshactl reads is refused.
func StreamJournal(path string, keep func(elem any) bool) (*Journal, error) {
	// A pipe or device is refused at once: it could block forever, and
	// only a regular file is a journal a run wrote.
	f, st, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, fsutil.Cause(err))
	}
	defer f.Close()
	if st.Size() > maxJournalSize {
		return nil, fmt.Errorf("read journal %s: %w: more than %d bytes", path, fsutil.ErrTooLarge, maxJournalSize)
	}
	// The file may grow while it is read: the cap holds all the same (a
	// byte past it read means the file is longer).
	r := &io.LimitedReader{R: f, N: maxJournalSize + 1}
	var j Journal
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	err = streamObject(dec, reflect.ValueOf(&j).Elem(), keep)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("invalid data after the top-level value")
		}
	}
	if r.N == 0 {
		return nil, fmt.Errorf("read journal %s: %w: more than %d bytes", path, fsutil.ErrTooLarge, maxJournalSize)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a drill journal: %v", path, err)
	}
	if j.Kind != "DrillRun" || j.RunID == "" || j.Drill.Name == "" {
		return nil, fmt.Errorf("%s is not a drill journal (kind %q)", path, j.Kind)
	}
	if j.Version > JournalVersion {
		return nil, fmt.Errorf("%s: journal version %d is newer than this koshactl reads (%d): use a newer koshactl", path, j.Version, JournalVersion)
	}
	return &j, nil
}

// streamObject decodes a JSON object into the struct v as encoding/json
// would (keys matched by their json tag, case-insensitively; an unknown key
// skipped; a repeated key's last value kept), except that a list field is
// read element by element through keep, and a nested struct without a JSON
// decoder of its own (the hypothesis) is read the same way.
func streamObject(dec *json.Decoder, v reflect.Value, keep func(any) bool) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		f, ok := fieldByTag(v, key)
		if !ok {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		switch {
		case f.Kind() == reflect.Slice:
			if err := streamList(dec, f, key, keep); err != nil {
				return err
			}
		case f.Kind() == reflect.Struct && !f.Addr().Type().Implements(unmarshalerType):
			if err := streamObject(dec, f, keep); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		default:
			if err := dec.Decode(f.Addr().Interface()); err != nil {
				return err
			}
		}
	}
	_, err := dec.Token() // the closing brace
	return err
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// streamList reads a JSON array (or null) into the slice f, one element at
// a time, each through keep.
func streamList(dec *json.Decoder, f reflect.Value, key string, keep func(any) bool) error {
	f.Set(reflect.Zero(f.Type())) // a repeated key replaces the list, as encoding/json does
	if !dec.More() {
		return fmt.Errorf("%s: no value", key)
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // null
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("%s: want a list, found %v", key, tok)
	}
	et := f.Type().Elem()
	for dec.More() {
		e := reflect.New(et)
		if err := dec.Decode(e.Interface()); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		if keep == nil || keep(e.Interface()) {
			f.Set(reflect.Append(f, e.Elem()))
		}
	}
	_, err = dec.Token() // the closing bracket
	return err
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %v", want, tok)
	}
	return nil
}

// fieldByTag is v's field whose json name is key (exact first, then
// case-insensitively, as encoding/json matches).
func fieldByTag(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	fold := -1
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || !t.Field(i).IsExported() {
			continue
		}
		if name == key {
			return v.Field(i), true
		}
		if fold < 0 && strings.EqualFold(name, key) {
			fold = i
		}
	}
	if fold >= 0 {
		return v.Field(fold), true
	}
	return reflect.Value{}, false
}
