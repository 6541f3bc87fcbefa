package resilience

import (
	"fmt"
	"math"
	"sync/atomic"
)

// BudgetSettings configure a [RetryBudget]. Every zero field takes the
// default written in its comment.
type BudgetSettings struct {
	// Capacity is the most tokens the bucket holds; it starts full. Zero
	// means 10: after a quiet period, a dependency that starts failing gets
	// at most 10 retries before retries are rationed to one per 10 successes.
	Capacity float64
	// Deposit is what each successful call adds. Zero means 0.1.
	Deposit float64
	// Cost is what each retry withdraws. Zero means 1. With the defaults
	// retries add at most ~10% load on top of successful calls.
	Cost float64
}

// Defaults of [BudgetSettings].
const (
	DefaultBudgetCapacity = 10
	DefaultBudgetDeposit  = 0.1
	DefaultBudgetCost     = 1
)

// milli is the fixed-point scale of the token count: token amounts are held
// as integer thousandths so deposits of 0.1 add up exactly.
const milli = 1000

// RetryBudget is the per-dependency token bucket that rations retries: each
// successful call deposits a fraction of a token, each retry withdraws a
// whole one, and an empty bucket means no retry. It is safe for concurrent
// use; a deposit into a full bucket is a single atomic load.
type RetryBudget struct {
	tokens  atomic.Int64 // thousandths of a token
	cap     int64
	deposit int64
	cost    int64
	denied  atomic.Uint64
}

// NewRetryBudget returns a full budget configured by s.
func NewRetryBudget(s BudgetSettings) (*RetryBudget, error) {
	if s.Capacity == 0 {
		s.Capacity = DefaultBudgetCapacity
	}
	if s.Deposit == 0 {
		s.Deposit = DefaultBudgetDeposit
	}
	if s.Cost == 0 {
		s.Cost = DefaultBudgetCost
	}
	for _, v := range []float64{s.Capacity, s.Deposit, s.Cost} {
		if !(v > 0) || v > 1e9 {
			return nil, fmt.Errorf("new retry budget: capacity %v, deposit %v, cost %v must be positive: %w",
				s.Capacity, s.Deposit, s.Cost, ErrInvalidSettings)
		}
	}
	b := &RetryBudget{
		cap:     int64(math.Round(s.Capacity * milli)),
		deposit: max(1, int64(math.Round(s.Deposit*milli))),
		cost:    max(1, int64(math.Round(s.Cost*milli))),
	}
	b.tokens.Store(b.cap)
	return b, nil
}

// Deposit credits one successful call.
func (b *RetryBudget) Deposit() {
	for {
		v := b.tokens.Load()
		if v >= b.cap {
			return
		}
		if b.tokens.CompareAndSwap(v, min(b.cap, v+b.deposit)) {
			return
		}
	}
}

// TryWithdraw takes the cost of one retry and reports whether the retry may
// happen. A bucket holding less than the cost refuses, and the refusal is
// counted.
func (b *RetryBudget) TryWithdraw() bool {
	for {
		v := b.tokens.Load()
		if v < b.cost {
			b.denied.Add(1)
			return false
		}
		if b.tokens.CompareAndSwap(v, v-b.cost) {
			return true
		}
	}
}

// Tokens returns the tokens in the bucket.
func (b *RetryBudget) Tokens() float64 { return float64(b.tokens.Load()) / milli }

// Capacity returns the most tokens the bucket holds.
func (b *RetryBudget) Capacity() float64 { return float64(b.cap) / milli }

// Denied counts retries refused for an empty bucket.
func (b *RetryBudget) Denied() uint64 { return b.denied.Load() }
