package resilience

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fixedRand returns a fixed fraction of its range and records the ranges
// asked for. Safe for concurrent use.
type fixedRand struct {
	mu    sync.Mutex
	frac  float64 // 0 = lowest value, 1 = highest
	asked []int64
}

func (r *fixedRand) Int64N(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, n)
	return min(n-1, int64(r.frac*float64(n-1)))
}

func TestBackoffFullJitterBounds(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second}
	ceilings := map[int]time.Duration{
		1: 200 * time.Millisecond, 2: 400 * time.Millisecond, 3: 800 * time.Millisecond,
		4: time.Second, 10: time.Second, 62: time.Second, 63: time.Second, 1000: time.Second,
	}
	for n, want := range ceilings {
		if got := b.Ceiling(n); got != want {
			t.Errorf("Ceiling(%d) = %v, want min(1s, 100ms·2^%d) = %v", n, got, n, want)
		}
		hi := &fixedRand{frac: 1}
		b.Rand = hi
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) with the highest draw = %v, want the ceiling %v", n, got, want)
		}
		if hi.asked[0] != int64(want)+1 {
			t.Errorf("Delay(%d) drew from [0, %d), want [0, ceiling+1) so the ceiling is included", n, hi.asked[0])
		}
		b.Rand = &fixedRand{frac: 0}
		if got := b.Delay(n); got != 0 {
			t.Errorf("Delay(%d) with the lowest draw = %v, want 0", n, got)
		}
	}
}

func TestBackoffEdges(t *testing.T) {
	if d := (Backoff{}).Delay(3); d != 0 {
		t.Errorf("zero backoff delayed %v", d)
	}
	uncapped := Backoff{Base: time.Second}
	if got := uncapped.Ceiling(70); got != math.MaxInt64 {
		t.Errorf("uncapped ceiling overflowed: %v", got)
	}
	if got := uncapped.Ceiling(3); got != 8*time.Second {
		t.Errorf("uncapped Ceiling(3) = %v", got)
	}
	_ = uncapped.Delay(70) // must not panic at the top of the range
}

func TestBackoffDistributionIsUniform(t *testing.T) {
	// Full jitter spreads retries evenly over [0, ceiling]: with a seeded
	// source, each quarter of the range gets about a quarter of the draws.
	r := rand.New(rand.NewPCG(1, 2))
	b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second, Rand: lockedRand{r: r}}
	var quarters [4]int
	const draws = 40000
	for range draws {
		d := b.Delay(2) // ceiling 400ms
		if d < 0 || d > 400*time.Millisecond {
			t.Fatalf("delay %v outside [0, 400ms]", d)
		}
		quarters[min(3, int(d/(100*time.Millisecond)))]++
	}
	for i, q := range quarters {
		if q < draws/4*9/10 || q > draws/4*11/10 {
			t.Errorf("quarter %d got %d of %d draws", i, q, draws)
		}
	}
}

type lockedRand struct {
	mu *sync.Mutex
	r  *rand.Rand
}

func (l lockedRand) Int64N(n int64) int64 {
	if l.mu != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	return l.r.Int64N(n)
}
