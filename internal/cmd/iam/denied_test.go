package iam_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
)

// A role outside a command's policy is stopped at the first item it may
// not touch, and nothing of the change is written. The data plane may read
// the freeze only with its overrides and write only its own records
// (audit#dp#): chaos sign, whose first read is the freeze item, is denied
// it, so no header is minted, printed or recorded. The reader may read
// overrides with the table's policy (the dashboard's refresh does), not
// force one: it is denied the force's transaction, at the override's
// write, and nothing of it is written. (A transaction allowed some of its
// items and not all is denied whole: the iamtest proxy's own test.)
func TestARoleIsDeniedAWholeChangeOutsideItsPolicy(t *testing.T) {
	t.Parallel()
	w := newAWSWorld(t)
	w.prepare()
	records := func() int {
		w.enf.SetPolicy(nil)
		return strings.Count(w.MustRun(0, "audit", "list", "-o", "json").Stdout, `"action":`)
	}
	for _, c := range []struct {
		role   iam.Role
		args   []string
		prefix string // the key denied
	}{
		{iam.Reader, []string{"breaker", "force-open", "openai", "--reason", "iam test", "--for", "10m"}, iam.BreakerItems},
		{iam.DataPlane, []string{"chaos", "sign", "--target", "openai", "--fault", "error", "-o", "value"}, iam.FreezeItems},
	} {
		before := records()
		w.asRole(t, c.role)
		r := w.Run(c.args...)
		denied := w.enf.TakeDenials()
		name := string(c.role) + ": koshactl " + strings.Join(c.args, " ")
		if r.Code == 0 || !mentionsDenial(r.Stderr) || r.Stdout != "" {
			t.Errorf("%s: exit %d, want a failure saying access was denied and nothing printed\n%s%s", name, r.Code, r.Stdout, r.Stderr)
		}
		if c.role == iam.Reader {
			// A force with nothing in force reads nothing: its first request
			// is its one transaction, denied whole.
			if len(denied) != 1 || denied[0].Action != iam.PutItem || !strings.Contains(denied[0].String(), "breaker#openai") ||
				!strings.Contains(denied[0].String(), "TransactWriteItems") {
				t.Errorf("%s: denied %v, want the transaction's write of the override", name, denied)
			}
		} else if len(denied) != 1 || denied[0].Action != iam.GetItem ||
			iamtest.PrefixOf(denied[0].Context["dynamodb:LeadingKeys"][0]) != c.prefix {
			t.Errorf("%s: denied %v, want the GetItem of the %s item, its first read", name, denied, c.prefix)
		}
		if after := records(); after != before {
			t.Errorf("%s: %d audit records, %d before: a denied change wrote its record", name, after, before)
		}
	}
	w.enf.SetPolicy(nil)
	if r := w.Run("breaker", "get", "openai"); r.Code != exitcode.NotFound {
		t.Errorf("breaker get openai after the reader's denied force: exit %d, want %d\n%s%s", r.Code, exitcode.NotFound, r.Stdout, r.Stderr)
	}
}
