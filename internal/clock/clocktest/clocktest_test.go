package clocktest

import (
	"testing"
	"time"
)

func TestFakeAfterFiresWhenAdvancedPastIt(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ch := f.After(time.Minute)
	f.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired before a minute passed")
	default:
	}
	f.Advance(time.Second)
	select {
	case at := <-ch:
		if !at.Equal(time.Unix(60, 0)) {
			t.Errorf("fired with %s", at)
		}
	default:
		t.Fatal("did not fire after a minute")
	}
	if f.Waiters() != 0 {
		t.Errorf("%d waiters left", f.Waiters())
	}
	select {
	case <-f.After(0):
	default:
		t.Fatal("After(0) does not fire at once")
	}
}

// WaitersChanged is closed when a wait begins and when one fires, never
// before.
func TestFakeWaitersChanged(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := f.WaitersChanged()
	if closed(ch) {
		t.Fatal("closed with no change")
	}
	f.Advance(time.Second) // nothing pending: no change
	if closed(ch) {
		t.Fatal("closed by an advance that fired nothing")
	}
	f.After(time.Minute)
	if !closed(ch) {
		t.Fatal("not closed when a wait began")
	}
	ch = f.WaitersChanged()
	f.Advance(time.Second)
	if closed(ch) {
		t.Fatal("closed before the wait fired")
	}
	f.Advance(time.Minute)
	if !closed(ch) || f.Waiters() != 0 {
		t.Fatal("not closed when the wait fired")
	}
}
