package breaker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/breaker"
)

func TestCheckForceReasonRequiresOneAndAppliesTheAuditRule(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"", "   ", "\t"} {
		if err := breaker.CheckForceReason(r); !errors.Is(err, breaker.ErrReasonRequired) {
			t.Errorf("CheckForceReason(%q) = %v, want ErrReasonRequired", r, err)
		}
	}
	for _, r := range []string{strings.Repeat("a", audit.MaxReasonLen+1), "ok \x1b]0;x\x07"} {
		err := breaker.CheckForceReason(r)
		if !errors.Is(err, audit.ErrInvalidReason) || errors.Is(err, breaker.ErrReasonRequired) {
			t.Errorf("CheckForceReason(%q) = %v, want audit.ErrInvalidReason", r, err)
		}
	}
	if err := breaker.CheckForceReason("provider incident INC-142"); err != nil {
		t.Errorf("a plain reason: %v", err)
	}
}

func TestCheckKnownDependency(t *testing.T) {
	t.Parallel()
	known := []string{"core-api", "openai"}
	if err := breaker.CheckKnownDependency("openai", known); err != nil {
		t.Errorf("a known name: %v", err)
	}
	if err := breaker.CheckKnownDependency("Open AI", known); !errors.Is(err, breaker.ErrInvalidDependency) {
		t.Errorf("a malformed name: %v, want ErrInvalidDependency", err)
	}
	for _, c := range []struct{ name, want string }{
		{"open-ai", `unknown dependency "open-ai": this context knows core-api, openai (did you mean "openai"?)`},
		{"coreapix", `unknown dependency "coreapix": this context knows core-api, openai (did you mean "core-api"?)`},
		{"postgres", `unknown dependency "postgres": this context knows core-api, openai`},
	} {
		err := breaker.CheckKnownDependency(c.name, known)
		if !errors.Is(err, breaker.ErrUnknownDependency) || err.Error() != c.want {
			t.Errorf("CheckKnownDependency(%q) = %v; want %q", c.name, err, c.want)
		}
	}
}
