package iamtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kosha-platform/koshactl/internal/iam"
)

// Request is one authorization question: may the caller do Action on
// Resource, with these condition context keys ("dynamodb:LeadingKeys",
// "kms:ViaService")?
type Request struct {
	Action   string
	Resource string
	Context  map[string][]string
}

func (r Request) String() string {
	s := r.Action + " on " + r.Resource
	if len(r.Context) > 0 {
		keys := make([]string, 0, len(r.Context))
		for k := range r.Context {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s += fmt.Sprintf(" %s=%v", k, r.Context[k])
		}
	}
	return s
}

// Allowed reports whether doc allows r: some Allow statement matches it and
// no Deny statement does.
func Allowed(doc iam.Document, r Request) bool {
	allowed := false
	for _, s := range doc.Statement {
		if !statementMatches(s, r) {
			continue
		}
		switch s.Effect {
		case "Deny":
			return false
		case "Allow":
			allowed = true
		}
	}
	return allowed
}

func statementMatches(s iam.Statement, r Request) bool {
	if !slices.ContainsFunc(s.Action, func(a string) bool { return wildcard(strings.ToLower(a), strings.ToLower(r.Action)) }) {
		return false
	}
	if !slices.ContainsFunc(s.Resource, func(p string) bool { return wildcard(p, r.Resource) }) {
		return false
	}
	for op, keys := range s.Condition {
		for key, patterns := range keys {
			if !conditionHolds(op, patterns, r.Context[key]) {
				return false
			}
		}
	}
	return true
}

// conditionHolds evaluates one condition operator on one key: values are
// the request's values for it (none when the key is absent).
func conditionHolds(op string, patterns, values []string) bool {
	set, base, _ := strings.Cut(op, ":")
	if base == "" {
		set, base = "", op
	}
	var match func(p, v string) bool
	switch base {
	case "StringEquals":
		match = func(p, v string) bool { return p == v }
	case "StringLike":
		match = wildcard
	default:
		return false // an operator this evaluator does not know: fail closed
	}
	anyPattern := func(v string) bool { return slices.ContainsFunc(patterns, func(p string) bool { return match(p, v) }) }
	switch set {
	case "ForAllValues":
		for _, v := range values {
			if !anyPattern(v) {
				return false
			}
		}
		return true // vacuously, with no value
	case "ForAnyValue":
		return slices.ContainsFunc(values, anyPattern)
	case "":
		// A single-valued key: absent fails, as in IAM.
		return len(values) == 1 && anyPattern(values[0])
	}
	return false
}

// wildcard matches IAM's pattern syntax: `*` any run of characters, `?` one.
func wildcard(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	return matchFrom(pattern, s)
}

func matchFrom(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if matchFrom(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			p, s = p[1:], s[1:]
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return s == ""
}

// Enforcer holds the policy the fakes enforce and what it denied. Its zero
// value enforces nothing (every request allowed), so a fake given one
// serves as before until a test sets a policy.
type Enforcer struct {
	// Principal names the caller in AccessDenied messages.
	Principal string

	mu      sync.Mutex
	doc     *iam.Document
	denials []Request
}

// NewEnforcer returns an enforcer for principal with no policy yet.
func NewEnforcer(principal string) *Enforcer { return &Enforcer{Principal: principal} }

// SetPolicy makes doc the caller's only identity policy; nil stops
// enforcing.
func (e *Enforcer) SetPolicy(doc *iam.Document) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.doc = doc
}

// Authorize asks about each request in turn and returns the AccessDenied
// message of the first one denied (recorded), or "" when all are allowed.
func (e *Enforcer) Authorize(reqs ...Request) string {
	if e == nil {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.doc == nil {
		return ""
	}
	for _, r := range reqs {
		if !Allowed(*e.doc, r) {
			e.denials = append(e.denials, r)
			return fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action",
				e.Principal, r.Action, r.Resource, r.Action)
		}
	}
	return ""
}

// Check is Authorize for one request, in the form the fakes take.
func (e *Enforcer) Check(action, resource string, context map[string][]string) (denied string) {
	return e.Authorize(Request{Action: action, Resource: resource, Context: context})
}

// TakeDenials returns the requests denied since the last call and forgets
// them.
func (e *Enforcer) TakeDenials() []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.denials
	e.denials = nil
	return out
}
