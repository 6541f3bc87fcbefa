package breaker_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
	"github.com/kosha-platform/koshactl/internal/testutil/faultproxy"
)

// lostAnswerEnv is a CLI on a DynamoDB context whose endpoint is a fault
// proxy in front of dynalite, with the table created.
func lostAnswerEnv(t *testing.T) (*clitest.Env, *faultproxy.Proxy) {
	t.Helper()
	p := faultproxy.Start(t, dynalite.Start(t))
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(p.URL(), "kosha-control")
	e.MustRun(0, "store", "init")
	return e, p
}

// auditActions lists the actions of the audit records on subject, sorted
// (the fake clock stamps every record in the same millisecond).
func auditActions(t *testing.T, e *clitest.Env, subject string) []string {
	t.Helper()
	var doc struct {
		Items []struct {
			Action  string `json:"action"`
			Subject string `json:"subject"`
		} `json:"items"`
	}
	out := e.MustRun(0, "audit", "list", "-o", "json").Stdout
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("audit list -o json: %v\n%s", err, out)
	}
	recs := doc.Items
	var acts []string
	for _, r := range recs {
		if r.Subject == subject {
			acts = append(acts, r.Action)
		}
	}
	sort.Strings(acts)
	return acts
}

type forceOut struct {
	Results []struct {
		Action            string `json:"action"`
		AuditID           string `json:"audit_id"`
		ConfirmedByReread bool   `json:"confirmed_by_reread"`
	} `json:"results"`
}

func TestForceOpenWhoseAnswerIsLostIsConfirmedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := lostAnswerEnv(t)
	p.LoseNext("PutItem", 1, faultproxy.Reset) // the override's write; the audit append is the next
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	if !strings.Contains(r.Stdout, "Forced open openai") || !strings.Contains(r.Stdout, store.ConfirmedNote) {
		t.Fatalf("stdout does not say the write was confirmed:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	if p.Lost("PutItem") != 1 {
		t.Fatalf("the proxy lost %d PutItem answers, want 1", p.Lost("PutItem"))
	}
	if got := auditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want one breaker.force-open", got)
	}
	e.MustRun(0, "breaker", "get", "openai")
}

func TestForceOpenOverwriteWhoseAnswerIsLostIsConfirmedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := lostAnswerEnv(t)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "first", "--for", "30m")
	p.LoseNext("PutItem", 1, faultproxy.Reset)
	r := e.MustRun(0, "breaker", "force-open", "openai", "--reason", "second", "--for", "30m", "--overwrite", "-o", "json")
	var out forceOut
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if len(out.Results) != 1 || out.Results[0].Action != "replaced" || !out.Results[0].ConfirmedByReread || out.Results[0].AuditID == "" {
		t.Fatalf("results %+v, want one replaced, confirmed by re-read, with an audit id", out.Results)
	}
	if got := auditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.force-open,breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want two breaker.force-open", got)
	}
	if g := e.MustRun(0, "breaker", "get", "openai"); !strings.Contains(g.Stdout, "second") {
		t.Fatalf("breaker get does not show the replacement:\n%s", g.Stdout)
	}
}

func TestClearWhoseAnswerIsLostIsReportedClearedAndAuditedOnce(t *testing.T) {
	t.Parallel()
	e, p := lostAnswerEnv(t)
	e.MustRun(0, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	p.LoseNext("DeleteItem", 1, faultproxy.Reset)
	r := e.MustRun(0, "breaker", "clear", "openai", "-o", "json")
	var out struct {
		Results []struct {
			Action            string  `json:"action"`
			AuditID           *string `json:"audit_id"`
			ConfirmedByReread bool    `json:"confirmed_by_reread"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	if len(out.Results) != 1 || out.Results[0].Action != "cleared" || out.Results[0].AuditID == nil || !out.Results[0].ConfirmedByReread {
		t.Fatalf("clear after a lost delete answer printed %s, want cleared with an audit id, confirmed by re-read", r.Stdout)
	}
	if p.Lost("DeleteItem") != 1 {
		t.Fatalf("the proxy lost %d DeleteItem answers, want 1", p.Lost("DeleteItem"))
	}
	if got := auditActions(t, e, "breaker#openai"); strings.Join(got, ",") != "breaker.clear,breaker.force-open" {
		t.Fatalf("audit records on breaker#openai: %v, want force-open then clear", got)
	}
	e.MustRun(cmdutil.ExitNotFound, "breaker", "get", "openai")
}

func TestInterruptDuringTheAuditAppendExitsAudit(t *testing.T) {
	t.Parallel()
	e, p := lostAnswerEnv(t)
	p.LoseNext("PutItem", 2, faultproxy.Withhold) // the audit append after the override's write
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- e.RunContext(ctx, "breaker", "force-open", "openai", "--reason", "provider incident", "--for", "30m")
	}()
	p.WaitLost(t, "PutItem", 1)
	cancel() // SIGINT, as cmd/koshactl delivers it: the command's context ends
	r := <-done
	if r.Code != cmdutil.ExitAudit {
		t.Fatalf("exit %d, want %d (the override was written, its record was not)\nstdout:\n%s\nstderr:\n%s", r.Code, cmdutil.ExitAudit, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "openai was forced open, but audit record not written") {
		t.Fatalf("stderr does not say the override was written:\n%s", r.Stderr)
	}
	e.MustRun(0, "breaker", "get", "openai")
}
