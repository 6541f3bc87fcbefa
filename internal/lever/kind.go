package lever

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Spec is what is known of a kind without building it: enough for the
// table's policy, IAM, notifications and the MCP server to serve it.
type Spec struct {
	// Name is the kind's name, the first word of its actions ("breaker").
	Name string
	// Prefix starts the pk of every item of the kind ("breaker#"); a
	// target's item is Prefix+target.
	Prefix string
	// Resource is the entity type of the kind's targets in the table's
	// policy (Kosha::Dependency), Noun what a target is called
	// ("dependency") and Item what its item is ("override").
	Resource, Noun, Item string
	// Lever is what one lever of the kind is called in a sentence
	// ("breaker override"): a protected context's prompt counts them.
	Lever string
	// About says what a target is, for the table's policy's schema ("A
	// dependency whose breaker a lever forces or clears.").
	About string
	// Inspect is the command that shows one target ("koshactl breaker
	// get"): a change whose outcome is unknown says to check with it.
	Inspect string
	// Actions are what the kind's levers do.
	Actions []Action
}

// Action is one thing a kind's lever does.
type Action struct {
	// Name is the action as the policy and the audit records name it
	// ("breaker.force-open").
	Name string
	// Verb is the action in a few words ("force open").
	Verb string
	// Internal actions (a drill's restore) are never asked of the table's
	// policy, requested or offered to an agent.
	Internal bool
	// Unguarded actions never wait for approvals: the table's policy is
	// not asked for them (a fleet freeze's set, which only makes the fleet
	// safer).
	Unguarded bool
	// Attempts bounds how often a change refused by the condition of one of
	// its own items is read and decided again, as a new change (a bucket a
	// client took from meanwhile); zero is once.
	Attempts int
	// DryRunActor resolves who acts on a dry run too (its result names the
	// actor, as a force's would-be override does); otherwise a dry run asks
	// nobody.
	DryRunActor bool
	// Propose, when set, offers the action to an agent (a proposal tool of
	// koshactl mcp, its arguments derived from it); the kind is then a
	// [Proposer].
	Propose *Proposal
}

// Key is target's item key.
func (s Spec) Key(target string) string { return s.Prefix + target }

// Action returns the kind's action named name.
func (s Spec) Action(name string) (Action, bool) {
	for _, a := range s.Actions {
		if a.Name == name {
			return a, true
		}
	}
	return Action{}, false
}

// Kind is one kind of lever: its items and the rules of moving them. The
// [Service] asks it, and writes what it decides.
type Kind interface {
	Spec() Spec
	// Check applies the kind's rules to c before anything is read: its
	// targets' names (c.Known's rule where the kind has it), its reason and
	// its params.
	Check(c Change) error
	// Plan decides c for target from its item as read (nil: absent) at now:
	// what the change does to it, or an error that refuses the whole change
	// (a conflict), nothing written. c.Actor is who acts ("" on a dry run
	// that asks nobody). The service plans again with the time of the write
	// when it builds the change.
	Plan(c Change, target string, item store.Item, now time.Time) (Plan, error)
	// Admit is the kind's last word on a decided change, before anything
	// is asked or written: a refusal that needs to read more (a near name
	// to suggest) or to see every target (a name neither known nor stored).
	Admit(ctx context.Context, c Change, plans []Plan) error
	// Conflict words why target's write was refused by its condition, once
	// the service gave up: cur is its item as stored then (nil: gone).
	Conflict(target string, cur store.Item) error
	// Encode is c's params as a change request holds them: one JSON
	// object, its members in a fixed order ({} for none).
	Encode(c Change) (json.RawMessage, error)
	// Params decodes what Encode wrote (a request's); nil raw is none.
	Params(action string, raw json.RawMessage) (any, error)
	// Summary says c in a few words: "force open openai for 30m".
	Summary(c Change) string
	// Bounds is how long c lasts as the table's policy judges it at now
	// (0: no bound), and whether it never lapses.
	Bounds(c Change, now time.Time) (time.Duration, bool)
	// Requested is the item a request's image of target holds, for a kind
	// whose approved changes are conditional on what the requester read
	// (ok false: the approval reads the item afresh).
	Requested(target string, image json.RawMessage) (it store.Item, ok bool, err error)
	// Notice is how a written outcome is announced.
	Notice(c Change, o Outcome) notify.Lever
}

// Plan is what a change does to one target, as its kind decided it.
type Plan struct {
	Target string
	// Item is the target's item as read (nil: absent).
	Item store.Item
	// Result is the kind's account of the target (its before and after),
	// as decided; [Outcome.Result] holds it as written.
	Result any
	// Noop is true when the target already is as asked: nothing is written
	// or recorded.
	Noop bool
	// Image is the item as read, as a change request keeps it (its audit
	// before-image; JSON null when absent).
	Image json.RawMessage
	// Write builds the target's conditional write and the audit entry
	// recording it, stamped with the change's token; it returns the result
	// as written. Nil with Noop.
	Write func(s Stamp) (store.Op, audit.Entry, any)
}

// Stamp is what a write carries of the change it is part of.
type Stamp struct {
	// Token is the change's token (the items' write_id, the records'
	// change).
	Token string
	// Approval is how the table's policy let the change through (nil:
	// none asked): on every record, and on the item where the kind's
	// contract keeps it.
	Approval *audit.Approval
}

// Entry registers a kind: its spec, and how the context's kind is built
// (on first use: a kind whose settings are wrong fails only the commands
// that use it).
type Entry struct {
	Spec Spec
	New  func() (Kind, error)
}

// Registry is the lever kinds of one context.
type Registry struct {
	entries []Entry
	mu      sync.Mutex
	built   map[string]Kind
}

// NewRegistry returns the registry of entries (a kind once each).
func NewRegistry(entries ...Entry) *Registry {
	return &Registry{entries: entries, built: map[string]Kind{}}
}

// ErrUnknownKind reports an action or kind no registered kind has: a
// request made by a newer koshactl, or a wiring bug.
var ErrUnknownKind = errors.New("no such lever kind")

// Specs are the registered kinds' specs, in registration order.
func (r *Registry) Specs() []Spec {
	out := make([]Spec, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.Spec
	}
	return out
}

// Kind returns the kind named name, built on first use.
func (r *Registry) Kind(name string) (Kind, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.built[name]; ok {
		return k, nil
	}
	for _, e := range r.entries {
		if e.Spec.Name != name {
			continue
		}
		k, err := e.New()
		if err != nil {
			return nil, err
		}
		r.built[name] = k
		return k, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownKind, name)
}

// Action finds the spec and action of an action name.
func (r *Registry) Action(name string) (Spec, Action, bool) {
	if r == nil {
		return Spec{}, Action{}, false
	}
	for _, e := range r.entries {
		if a, ok := e.Spec.Action(name); ok {
			return e.Spec, a, true
		}
	}
	return Spec{}, Action{}, false
}

// KindOf is the kind an action belongs to: its first word.
func KindOf(action string) string {
	k, _, _ := strings.Cut(action, ".")
	return k
}
