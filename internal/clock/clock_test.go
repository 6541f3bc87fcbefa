package clock

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
