package policy

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	cedar "github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/lazyre"
)

// Schema is the Cedar schema (human-readable form) every stored policy is
// validated against: entity types Kosha::Actor (in Kosha::Role),
// Kosha::Dependency and Kosha::Client, the lever actions and their context.
//
//go:embed schema.cedarschema
var Schema string

// The lever actions a policy names (Kosha::Action::"<name>"); they are the
// audit records' actions.
const (
	ActionForceOpen      = "breaker.force-open"
	ActionClear          = "breaker.clear"
	ActionRateLimitReset = "ratelimit.reset"
	ActionRateLimitDrain = "ratelimit.drain"
	ActionRateLimitSet   = "ratelimit.set"
)

// Actions lists every lever action, in the order documented.
var Actions = []string{ActionForceOpen, ActionClear, ActionRateLimitReset, ActionRateLimitDrain, ActionRateLimitSet}

// MaxBytes bounds a policy's text: it is stored whole in one item.
const MaxBytes = 64 * 1024

// ErrInvalid marks a policy text that does not parse or does not validate
// against [Schema]; nothing was stored.
var ErrInvalid = exitcode.New(exitcode.Usage, "invalid policy")

// Error says where a policy text is wrong: the line (1-based; 0 when the
// problem is the whole text) and the problem. It matches [ErrInvalid].
type Error struct {
	File    string
	Line    int
	Problem string
}

func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	return fmt.Sprintf("%s: %s", where, e.Problem)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return errors.Is(ErrInvalid, target) }

// Set is a parsed, validated policy set.
type Set struct {
	// Text is the policy exactly as given (what is stored and shown).
	Text string
	ps   *cedar.PolicySet
	ids  []cedar.PolicyID
	line map[cedar.PolicyID]int
}

// validator is built once, on first use (not at start-up: every command
// would pay for it): the schema is part of the binary.
var validator = sync.OnceValue(func() *validate.Validator {
	var s schema.Schema
	s.SetFilename("schema.cedarschema")
	if err := s.UnmarshalCedar([]byte(Schema)); err != nil {
		panic("policy: the built-in schema does not parse: " + err.Error())
	}
	r, err := s.Resolve()
	if err != nil {
		panic("policy: the built-in schema does not resolve: " + err.Error())
	}
	return validate.New(r)
})

// parsePos finds "<input>:LINE:COL" in cedar-go's parse errors.
var parsePos = lazyre.New(`<input>:(\d+):(\d+):? ?`)

// exactGot is cedar-go's "exact got X want Y" (a token not the one the
// grammar wants), reworded.
var exactGot = lazyre.New(`"[^"]*": exact got (\S+) want (\S+)`)

// Parse parses and validates text (named file in errors). A problem is an
// *[Error] naming the line; policies are named by their @id annotation, or
// "policy<N>" (N from 0, in the text's order) without one, and an @id used
// twice is refused.
func Parse(file string, text []byte) (*Set, error) {
	if len(text) > MaxBytes {
		return nil, &Error{File: file, Problem: fmt.Sprintf("the policy is %d bytes; a table's policy holds at most %d", len(text), MaxBytes)}
	}
	if strings.TrimSpace(string(text)) == "" {
		return nil, &Error{File: file, Problem: "the policy is empty: write at least one permit (an empty policy would deny every lever)"}
	}
	list, err := cedar.NewPolicyListFromBytes(file, text)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "parser error: ")
		msg = strings.TrimPrefix(msg, "parse error at ")
		line := 0
		if m := parsePos.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.Replace(msg, m[0], "column "+m[2]+": ", 1)
		}
		if m := exactGot.FindStringSubmatch(msg); m != nil {
			msg = strings.Replace(msg, m[0], fmt.Sprintf("found %q where %q was expected", m[1], m[2]), 1)
		}
		return nil, &Error{File: file, Line: line, Problem: firstLine(msg)}
	}
	s := &Set{Text: string(text), ps: cedar.NewPolicySet(), line: map[cedar.PolicyID]int{}}
	for i, p := range list {
		id := cedar.PolicyID("policy" + strconv.Itoa(i))
		if v, ok := p.Annotations()["id"]; ok {
			id = cedar.PolicyID(v)
		}
		line := p.Position().Line
		if !s.ps.Add(id, p) {
			return nil, &Error{File: file, Line: line, Problem: fmt.Sprintf("@id(%q) is used by the policy at line %d too: give each policy its own id", id, s.line[id])}
		}
		if err := validator().Policy(string(id), (*xast.Policy)(p.AST())); err != nil {
			return nil, &Error{File: file, Line: line, Problem: firstLine(err.Error()) + " (see docs/contracts/policy.md for the schema)"}
		}
		if err := checkApprovals(p); err != nil {
			return nil, &Error{File: file, Line: line, Problem: err.Error()}
		}
		s.ids = append(s.ids, id)
		s.line[id] = line
	}
	return s, nil
}

// checkApprovals refuses an @approvals annotation that is not a count.
func checkApprovals(p *cedar.Policy) error {
	v, ok := p.Annotations()["approvals"]
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 0 || n > MaxApprovals {
		return fmt.Errorf("@approvals(%q) is not a count from 0 to %d", string(v), MaxApprovals)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// Policies lists the set's policy ids in the text's order.
func (s *Set) Policies() []string {
	out := make([]string, len(s.ids))
	for i, id := range s.ids {
		out[i] = string(id)
	}
	return out
}
