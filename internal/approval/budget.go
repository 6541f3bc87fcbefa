package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/proof"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// ProposalsPrefix starts the keys of a proposer's own bookkeeping, each
// after the proposer's [proof.Writer.KeyID] (the IAM policies let a
// principal write only its own: proposals#${aws:userid}#*):
//
//	proposals#<writer id>#budget       the times of its proposals in the last hour
//	proposals#<writer id>#ask#<hash>   its pending request of one change
//
// Both are written in the transaction of the request they count,
// conditional on the item as read: two proposals at once are serialized
// by them (docs/contracts/policy.md, "Proposals").
const ProposalsPrefix = "proposals#"

// The proposal budget: how many requests one identity's proposals may make
// in any hour ([BudgetWindow]).
const (
	DefaultProposalsPerHour = 100
	MaxProposalsPerHour     = 1000
	BudgetWindow            = time.Hour
)

// Attributes of the proposals items.
const (
	attrTimes   = "times"
	attrRequest = "request"
)

// CheckProposalsPerHour applies the bounds of a context's budget (zero:
// [DefaultProposalsPerHour]).
func CheckProposalsPerHour(n int) error {
	if n < 0 || n > MaxProposalsPerHour {
		return fmt.Errorf("proposals per hour %d: give 1 to %d", n, MaxProposalsPerHour)
	}
	return nil
}

// ErrBudgetSpent matches a *[BudgetError]. It exits 7 (refused).
var ErrBudgetSpent = exitcode.New(exitcode.Refused, "proposal budget spent")

// BudgetError refuses a proposal over its proposer's budget: nothing was
// stored or announced.
type BudgetError struct {
	// Limit is the budget: proposals per hour.
	Limit int
	// RetryAt is when the oldest proposal counted leaves the hour.
	RetryAt time.Time
	// RetryIn is RetryAt from now, in whole seconds rounded up.
	RetryIn time.Duration
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("proposal budget spent: this identity made %d change requests in the last hour, the most its context allows "+
		"(mcp.proposals-per-hour): retry at %s (in %d seconds), or ask a person to act on the requests waiting (koshactl request list)",
		e.Limit, e.RetryAt.UTC().Format(time.RFC3339), int64(e.RetryIn/time.Second))
}

// Is makes errors.Is(err, ErrBudgetSpent) true, and so exit 7.
func (e *BudgetError) Is(target error) bool {
	return target == ErrBudgetSpent || errors.Is(ErrBudgetSpent, target)
}

// errProposalsMoved: the proposer's budget or pending item changed between
// the read and the write (another proposal of the same identity landed):
// read again and decide again.
var errProposalsMoved = errors.New("the proposer's proposals changed meanwhile")

// proposalKeys are w's budget key and the key of its pending request of
// the change whose ask hash is hash.
func proposalKeys(w proof.Writer, hash string) (budget, pending string) {
	base := ProposalsPrefix + w.KeyID() + "#"
	return base + "budget", base + "ask#" + hash
}

// budget is a proposer's budget item as read: the times of its requests in
// the last hour, oldest first.
type budget struct {
	key   string
	times []time.Time
	read  store.Item
}

// budgetOf decodes the budget item it (nil: none yet). A malformed one is
// an error: the budget fails closed.
func budgetOf(key string, it store.Item) (budget, error) {
	b := budget{key: key, read: it}
	if it == nil {
		return b, nil
	}
	var ms []int64
	if err := json.Unmarshal([]byte(it.Str(attrTimes)), &ms); err != nil || it.WriteID() == "" {
		return b, fmt.Errorf("the proposal budget item %s is malformed (times %s): proposals are refused until it is deleted",
			textsafe.Quote(key), textsafe.Quote(textsafe.Truncate(it.Str(attrTimes), 40)))
	}
	for _, m := range ms {
		b.times = append(b.times, time.UnixMilli(m).UTC())
	}
	slices.SortFunc(b.times, time.Time.Compare)
	return b, nil
}

// spend counts one more proposal at now within limit per hour: the times
// to store, or the *BudgetError that refuses it.
func (b budget) spend(now time.Time, limit int) ([]time.Time, error) {
	since := now.Add(-BudgetWindow)
	live := slices.DeleteFunc(slices.Clone(b.times), func(t time.Time) bool { return !t.After(since) })
	if len(live) >= limit {
		at := live[len(live)-limit].Add(BudgetWindow)
		in := at.Sub(now)
		if r := in % time.Second; r != 0 {
			in += time.Second - r
		}
		return nil, &BudgetError{Limit: limit, RetryAt: at, RetryIn: in}
	}
	return append(live, now), nil
}

// put is the write of times as the budget, by the change token, conditional
// on the item as read.
func (b budget) put(times []time.Time, token string) store.Op {
	ms := make([]int64, len(times))
	for i, t := range times {
		ms[i] = t.UnixMilli()
	}
	doc, _ := json.Marshal(ms)
	it := store.Item{store.PK: b.key, attrTimes: string(doc), store.WriteIDAttr: token,
		store.TTLAttr: times[len(times)-1].Add(BudgetWindow).Unix()}
	return store.PutOp(it, asRead(b.read))
}

// asRead is the condition that the item is still as read (absent when it
// was).
func asRead(read store.Item) store.Condition {
	if read == nil {
		return store.IfAbsent()
	}
	return store.IfEquals(store.WriteIDAttr, read.WriteID())
}

// pendingPut is the write of the proposer's pending item naming request r,
// conditional on the item as read.
func pendingPut(key string, read store.Item, r Request, token string) store.Op {
	it := store.Item{store.PK: key, attrRequest: r.ID, attrExpiresAt: r.ExpiresAt.UnixMilli(), store.WriteIDAttr: token,
		store.TTLAttr: r.ExpiresAt.Unix()}
	return store.PutOp(it, asRead(read))
}
