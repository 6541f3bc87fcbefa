package resilience

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRetryBudget(t *testing.T) {
	b, err := NewRetryBudget(BudgetSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Tokens() != 10 || b.Capacity() != 10 {
		t.Fatalf("a new budget holds %v of %v tokens, want a full 10", b.Tokens(), b.Capacity())
	}
	for i := range 10 {
		if !b.TryWithdraw() {
			t.Fatalf("retry %d refused with %v tokens", i+1, b.Tokens())
		}
	}
	if b.TryWithdraw() {
		t.Fatal("an empty budget allowed a retry")
	}
	if b.Denied() != 1 {
		t.Fatalf("Denied = %d", b.Denied())
	}
	for range 9 {
		b.Deposit()
	}
	if b.TryWithdraw() {
		t.Fatalf("9 successes (0.9 tokens) paid for a retry")
	}
	b.Deposit()
	if b.Tokens() != 1 {
		t.Fatalf("10 successes deposited %v tokens, want exactly 1", b.Tokens())
	}
	if !b.TryWithdraw() {
		t.Fatal("10 successes did not pay for one retry")
	}
	for range 1000 {
		b.Deposit()
	}
	if b.Tokens() != 10 {
		t.Fatalf("deposits overflowed the capacity: %v", b.Tokens())
	}
}

func TestRetryBudgetCustomAndInvalid(t *testing.T) {
	b, err := NewRetryBudget(BudgetSettings{Capacity: 2, Deposit: 0.5, Cost: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !b.TryWithdraw() || b.TryWithdraw() {
		t.Fatal("capacity 2 at cost 2 should allow exactly one retry")
	}
	b.Deposit()
	b.Deposit()
	b.Deposit()
	if b.TryWithdraw() {
		t.Fatal("1.5 tokens paid for a retry costing 2")
	}
	for _, s := range []BudgetSettings{{Capacity: -1}, {Deposit: -0.1}, {Cost: -1}, {Capacity: 1e12}} {
		if _, err := NewRetryBudget(s); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("NewRetryBudget(%+v): %v", s, err)
		}
	}
}

func TestRetryBudgetConcurrentWithdrawals(t *testing.T) {
	b, _ := NewRetryBudget(BudgetSettings{})
	var granted atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if b.TryWithdraw() {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if g := granted.Load(); g != 10 || b.Tokens() != 0 || b.Denied() != 190 {
		t.Fatalf("200 racing retries on a full budget: %d granted, %v left, %d denied; want 10, 0, 190",
			g, b.Tokens(), b.Denied())
	}
	for range 200 {
		wg.Go(b.Deposit)
	}
	wg.Wait()
	if b.Tokens() != 10 {
		t.Fatalf("200 racing deposits of 0.1 left %v tokens, want the capacity 10", b.Tokens())
	}
}
