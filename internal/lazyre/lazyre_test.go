package lazyre_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/lazyre"
)

func TestMatchesAsRegexp(t *testing.T) {
	re := lazyre.New(`^yaml: (?:line (\d+): )?(.*)$`)
	if re.String() != `^yaml: (?:line (\d+): )?(.*)$` {
		t.Errorf("String() = %q", re.String())
	}
	if !re.MatchString("yaml: line 3: bad") || re.MatchString("json: bad") {
		t.Error("MatchString does not match as the expression does")
	}
	if got := re.FindStringSubmatch("yaml: line 3: bad"); !slices.Equal(got, []string{"yaml: line 3: bad", "3", "bad"}) {
		t.Errorf("FindStringSubmatch = %q", got)
	}
}

func TestCompilesOnceUnderConcurrentUse(t *testing.T) {
	re := lazyre.New(`^[a-z]+$`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !re.MatchString("abc") {
				t.Error("no match")
			}
		})
	}
	wg.Wait()
	first := re.Compiled()
	if re.Compiled() != first {
		t.Error("compiled twice")
	}
}

func TestInvalidExpressionPanicsOnFirstUse(t *testing.T) {
	re := lazyre.New(`(`) // declaring it does not compile it
	defer func() {
		if recover() == nil {
			t.Error("an invalid expression did not panic on first use")
		}
	}()
	re.MatchString("x")
}
