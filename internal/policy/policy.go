package policy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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

// MaxBytes bounds a policy's text: it is stored whole in one item.
const MaxBytes = 64 * 1024

// ErrInvalid marks a policy text that does not parse or does not validate
// against its [Schema]; nothing was stored.
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
	Text   string
	ps     *cedar.PolicySet
	ids    []cedar.PolicyID
	line   map[cedar.PolicyID]int
	schema *Schema
}

// Lever is a lever kind as the table's policy names it: the entity type
// of its targets (Kosha::Dependency), a line saying what one is, and its
// actions (Kosha::Action::"breaker.force-open").
type Lever struct {
	Resource, Doc string
	Actions       []string
}

// Schema is the Cedar schema every policy is validated against
// (docs/contracts/policy.md): actors and their roles, what every lever
// request carries, and each lever kind's entity and actions. Its validator
// is built on first use (not at start-up: every command would pay for it).
type Schema struct {
	// Text is the schema in Cedar's human-readable form.
	Text      string
	resources map[string]string
	validator func() (*validate.Validator, error)
}

// schemaBase is what every schema holds before its levers' entities.
const schemaBase = `// The schema every koshactl table policy is validated against
// (docs/contracts/policy.md). Principals are the verified or asserted
// actors of koshactl; actions are the levers; resources what they move.
namespace Kosha {
  // An IAM role: the role name of an assumed-role (or role) ARN.
  entity Role;

  // Who acts: the caller ARN STS returned (verified), or the name the
  // environment asserted (unverified). Member of the Role its ARN names.
  entity Actor in [Role] {
    arn: String,
    account: String,
    verified: Bool,
  };
`

// schemaContext is the context every lever request carries.
const schemaContext = `
  // What every lever request carries besides who, what and on what.
  type LeverContext = {
    // How long the change lasts, in whole seconds (0 for a clear or a
    // bucket lever, and for a change without expiry).
    duration_seconds: Long,
    // True for an override that never expires (--no-expiry).
    no_expiry: Bool,
    // True when the actor asks to act at once (--break-glass).
    break_glass: Bool,
    // Approvals from people other than the requester (0 when asking).
    approvals: Long,
    // True when the change rolls back one the same actor made (a bake's
    // put-back of the override its clear removed: breaker.rollback).
    own_rollback: Bool,
  };
`

// NewSchema is the schema of the lever kinds levers.
func NewSchema(levers ...Lever) *Schema {
	var b strings.Builder
	b.WriteString(schemaBase)
	sch := &Schema{resources: map[string]string{}}
	for _, l := range levers {
		fmt.Fprintf(&b, "\n  // %s\n  entity %s;\n", l.Doc, l.Resource)
	}
	b.WriteString(schemaContext)
	for _, l := range levers {
		quoted := make([]string, len(l.Actions))
		for i, a := range l.Actions {
			quoted[i], sch.resources[a] = strconv.Quote(a), l.Resource
		}
		fmt.Fprintf(&b, "\n  action %s appliesTo {\n    principal: Actor,\n    resource: %s,\n    context: LeverContext,\n  };\n",
			strings.Join(quoted, ", "), l.Resource)
	}
	b.WriteString("}\n")
	sch.Text = b.String()
	sch.validator = sync.OnceValues(func() (*validate.Validator, error) {
		var s schema.Schema
		s.SetFilename("schema.cedarschema")
		if err := s.UnmarshalCedar([]byte(sch.Text)); err != nil {
			return nil, fmt.Errorf("the levers' schema does not parse: %w", err)
		}
		r, err := s.Resolve()
		if err != nil {
			return nil, fmt.Errorf("the levers' schema does not resolve: %w", err)
		}
		return validate.New(r), nil
	})
	return sch
}

// Resource is the entity type of action's targets ("" for an action no
// lever of the schema has).
func (s *Schema) Resource(action string) string { return s.resources[action] }

// Actions are the actions of the schema's levers, sorted.
func (s *Schema) Actions() []string { return slices.Sorted(maps.Keys(s.resources)) }

// parsePos finds "<input>:LINE:COL" in cedar-go's parse errors.
var parsePos = lazyre.New(`<input>:(\d+):(\d+):? ?`)

// exactGot is cedar-go's "exact got X want Y" (a token not the one the
// grammar wants), reworded.
var exactGot = lazyre.New(`"[^"]*": exact got (\S+) want (\S+)`)

// Parse parses text (named file in errors) and validates it against sch.
// A problem is an *[Error] naming the line; policies are named by their @id
// annotation, or "policy<N>" (N from 0, in the text's order) without one,
// and an @id used twice is refused.
func Parse(sch *Schema, file string, text []byte) (*Set, error) {
	validator, err := sch.validator()
	if err != nil {
		return nil, err
	}
	if len(text) > MaxBytes {
		return nil, &Error{File: file, Problem: fmt.Sprintf("the policy is %d bytes; a table's policy holds at most %d", len(text), MaxBytes)}
	}
	if strings.TrimSpace(string(text)) == "" {
		return nil, &Error{File: file, Problem: "the policy is empty: write at least one permit (an empty policy would deny every lever); " +
			"to let every change through as without a policy, set docs/policies/allow-all.cedar (permit (principal, action, resource);)"}
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
	s := &Set{Text: string(text), ps: cedar.NewPolicySet(), line: map[cedar.PolicyID]int{}, schema: sch}
	for i, p := range list {
		id := cedar.PolicyID("policy" + strconv.Itoa(i))
		if v, ok := p.Annotations()["id"]; ok {
			id = cedar.PolicyID(v)
		}
		line := p.Position().Line
		if !s.ps.Add(id, p) {
			return nil, &Error{File: file, Line: line, Problem: fmt.Sprintf("@id(%q) is used by the policy at line %d too: give each policy its own id", id, s.line[id])}
		}
		if err := validator.Policy(string(id), (*xast.Policy)(p.AST())); err != nil {
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
