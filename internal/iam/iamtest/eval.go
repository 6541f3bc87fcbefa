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
	resources, ok := resolveAll(s.Resource, r)
	if !ok || !slices.ContainsFunc(resources, func(p string) bool { return wildcard(p, r.Resource) }) {
		return false
	}
	for op, keys := range s.Condition {
		for key, patterns := range keys {
			resolved, ok := resolveAll(patterns, r)
			if !ok || !conditionHolds(op, resolved, r.Context[key]) {
				return false
			}
		}
	}
	return true
}

// resolveAll replaces the policy variables of patterns (${aws:userid},
// ${aws:PrincipalArn}: any ${KEY}) with the request's single value for
// KEY, as IAM does when it evaluates the policy. A variable the request
// has no single value for, or whose value holds a wildcard, cannot be
// resolved: ok is false, and the statement matches nothing (IAM: an
// unresolved variable makes the statement invalid).
func resolveAll(patterns []string, r Request) ([]string, bool) {
	if !slices.ContainsFunc(patterns, func(p string) bool { return strings.Contains(p, "${") }) {
		return patterns, true
	}
	out := make([]string, len(patterns))
	for i, p := range patterns {
		var b strings.Builder
		for {
			start := strings.Index(p, "${")
			if start < 0 {
				b.WriteString(p)
				break
			}
			end := strings.IndexByte(p[start:], '}')
			if end < 0 {
				return nil, false
			}
			vs := r.Context[p[start+2:start+end]]
			if len(vs) != 1 || strings.ContainsAny(vs[0], "*?") {
				return nil, false
			}
			b.WriteString(p[:start])
			b.WriteString(vs[0])
			p = p[start+end+1:]
		}
		out[i] = b.String()
	}
	return out, true
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

// Caller is one principal the proxy tells apart by its access key: what
// IAM puts in each of its requests' context (aws:userid,
// aws:PrincipalArn, aws:PrincipalType), which policy variables resolve to.
type Caller struct {
	// UserID is the unique id (aws:userid): an IAM user's id,
	// ROLEID:SESSION for an assumed role, ACCOUNT:NAME for a federated
	// user (sts:GetFederationToken).
	UserID string
	// ARN is the caller ARN STS names (a user's, the session's, the
	// federated user's).
	ARN string
}

// context is the caller's global condition keys.
func (c Caller) context() map[string][]string {
	out := map[string][]string{"aws:userid": {c.UserID}}
	parts := strings.SplitN(c.ARN, ":", 6)
	if len(parts) != 6 {
		return out
	}
	switch res := parts[5]; {
	case parts[2] == "iam" && strings.HasPrefix(res, "user/"):
		out["aws:PrincipalArn"], out["aws:PrincipalType"], out["aws:username"] = []string{c.ARN}, []string{"User"}, []string{res[strings.LastIndexByte(res, '/')+1:]}
	case parts[2] == "sts" && strings.HasPrefix(res, "assumed-role/"):
		role, _, _ := strings.Cut(strings.TrimPrefix(res, "assumed-role/"), "/")
		out["aws:PrincipalArn"] = []string{"arn:" + parts[1] + ":iam::" + parts[4] + ":role/" + role}
		out["aws:PrincipalType"] = []string{"AssumedRole"}
	case parts[2] == "sts" && strings.HasPrefix(res, "federated-user/"):
		// IAM's aws:PrincipalArn of a federated user is its own ARN.
		out["aws:PrincipalArn"], out["aws:PrincipalType"] = []string{c.ARN}, []string{"FederatedUser"}
	}
	return out
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
	callers map[string]Caller
}

// AddCaller tells requests signed with accessKeyID apart as c's: their
// context holds c's keys, so a policy's variables resolve to c. A request
// signed with a key no caller was added for has none of them (a statement
// with a variable then matches nothing for it).
func (e *Enforcer) AddCaller(accessKeyID string, c Caller) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.callers == nil {
		e.callers = map[string]Caller{}
	}
	e.callers[accessKeyID] = c
}

// AuthorizeKey is [Enforcer.Authorize] for requests signed with
// accessKeyID: each asked with the caller's global keys in its context.
func (e *Enforcer) AuthorizeKey(accessKeyID string, reqs ...Request) string {
	if e == nil {
		return ""
	}
	e.mu.Lock()
	c, ok := e.callers[accessKeyID]
	e.mu.Unlock()
	if !ok {
		return e.Authorize(reqs...)
	}
	with := make([]Request, len(reqs))
	for i, r := range reqs {
		ctx := c.context()
		for k, v := range r.Context {
			ctx[k] = v
		}
		with[i] = Request{Action: r.Action, Resource: r.Resource, Context: ctx}
	}
	return e.Authorize(with...)
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

// Policy is the policy the enforcer holds (nil: none).
func (e *Enforcer) Policy() *iam.Document {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.doc
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
