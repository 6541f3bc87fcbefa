package cmdutil_test

import (
	"os"
	"slices"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
)

func TestEnvironLookupIsTheLastPair(t *testing.T) {
	t.Parallel()
	e := cmdutil.Environ(func() []string { return []string{"A=1", "B=", "A=2", "C=x=y", "junk"} })
	for _, tc := range []struct {
		name, want string
		set        bool
	}{{"A", "2", true}, {"B", "", true}, {"C", "x=y", true}, {"junk", "", false}, {"D", "", false}} {
		if v, ok := e.Lookup(tc.name); v != tc.want || ok != tc.set {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.name, v, ok, tc.want, tc.set)
		}
		if v := e.Get(tc.name); v != tc.want {
			t.Errorf("Get(%q) = %q, want %q", tc.name, v, tc.want)
		}
	}
	if got := e.List(); len(got) != 5 {
		t.Errorf("List = %v", got)
	}
}

func TestNilEnvironIsTheProcess(t *testing.T) {
	t.Setenv("KOSHACTL_ENVIRON_TEST", "here")
	var e cmdutil.Environ
	if v, ok := e.Lookup("KOSHACTL_ENVIRON_TEST"); !ok || v != "here" {
		t.Errorf("Lookup = %q, %v", v, ok)
	}
	if !slices.Equal(e.List(), os.Environ()) {
		t.Error("List is not os.Environ")
	}
}
