package keys_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/exitcode"
)

// TestLocalRotateIsCompareAndSet: eight local rotations at once all
// succeeded, and the key current before could stop verifying (a later
// winner retired it while an earlier one's key was lost). Rotation is now
// a compare-and-set under a lock: every rotation either wins or fails with
// ErrConflict (exit 4) having changed nothing, no two winners replaced the
// same key, the winners form one chain from the first key, and the key the
// last winner replaced still verifies beside the new one.
func TestLocalRotateIsCompareAndSet(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		l := keys.NewLocal(t.TempDir())
		first, err := l.Current(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		results := make([]keys.Rotation, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = l.Rotate(context.Background(), keys.RotateOptions{Force: true})
			})
		}
		close(start)
		wg.Wait()
		replaced := map[string]string{} // previous kid -> new kid
		for i := range n {
			switch {
			case errs[i] == nil:
				prev := results[i].Previous.KID()
				if other, dup := replaced[prev]; dup {
					t.Fatalf("round %d: two rotations replaced kid %s (with %s and %s): one was lost", round, prev, other, results[i].Current.KID())
				}
				replaced[prev] = results[i].Current.KID()
			case errors.Is(errs[i], keys.ErrConflict) && exitcode.Of(errs[i]) == exitcode.Conflict:
			default:
				t.Fatalf("round %d: rotation %d: %v, want success or ErrConflict (exit 4)", round, i, errs[i])
			}
		}
		if len(replaced) == 0 {
			t.Fatalf("round %d: no rotation won", round)
		}
		// Follow the chain from the first key: it must take every winner.
		kid, before, steps := first.KID(), "", 0
		for {
			next, ok := replaced[kid]
			if !ok {
				break
			}
			before, kid, steps = kid, next, steps+1
		}
		if steps != len(replaced) {
			t.Fatalf("round %d: the winners do not form one chain from kid %s: %v", round, first.KID(), replaced)
		}
		for _, want := range []string{kid, before} {
			if _, err := l.ByKID(context.Background(), want); err != nil {
				t.Errorf("round %d: kid %s no longer verifies: %v", round, want, err)
			}
		}
	}
}
