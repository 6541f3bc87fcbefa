package drill

import "fmt"

// What the external tests (sink_test.go, which shares drilltest with the
// other drill packages) use of the package's insides.
var (
	HeaderControl = headerControl
	ValidHost     = validHost
)

// ParseTemplate parses raw as a template built in code; the error names
// its first syntax error. (Templates from a drill file come from the
// [Decoder], which checks each reference against the file.)
func ParseTemplate(raw string) (Template, error) {
	t, errs := parseTemplate(raw)
	if len(errs) > 0 {
		return Template{}, fmt.Errorf("template %q: %s", raw, errs[0].msg)
	}
	return t, nil
}
