package chaos_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/root"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

// cli runs koshactl in-process like clitest, optionally adjusting the
// production factory first (the Secrets Manager tests point the context's
// AWS configuration at a fake), and keeps everything printed so tests can
// check that no key ever appeared.
type cli struct {
	*clitest.Env
	hook    func(*cmdenv.Factory)
	printed []string
}

func newCLI(t *testing.T) *cli { return &cli{Env: clitest.New(t, clitest.Parallel())} }

func (c *cli) run(args ...string) clitest.Result {
	c.T.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(c.Stdin)
	ios.SetStdinTTY(c.TTY)
	ios.SetStdoutTTY(c.TTY)
	ios.SetStderrTTY(c.TTY)
	f := c.Factory(ios)
	if c.hook != nil {
		c.hook(f)
	}
	code := root.Run(context.Background(), f, args)
	r := clitest.Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
	c.printed = append(c.printed, r.Stdout, r.Stderr)
	return r
}

func (c *cli) must(want int, args ...string) clitest.Result {
	c.T.Helper()
	r := c.run(args...)
	if r.Code != want {
		c.T.Fatalf("koshactl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// oneErrorLine fails unless stderr is exactly one "error: ..." line
// containing every want.
func oneErrorLine(t *testing.T, r clitest.Result, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
		t.Errorf("stderr is not one error line:\n%s", r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.Stderr)
		}
	}
}

type auditRecord struct {
	Actor   string          `json:"actor"`
	Action  string          `json:"action"`
	Subject string          `json:"subject"`
	Reason  string          `json:"reason"`
	Context string          `json:"context"`
	Before  json.RawMessage `json:"before"`
	After   json.RawMessage `json:"after"`
}

func auditRecords(t *testing.T, c *cli, action string) []auditRecord {
	t.Helper()
	args := []string{"audit", "list", "--limit", "0", "-o", "json"}
	if action != "" {
		args = append(args, "--action", action)
	}
	return clitest.Decode[struct {
		Items []auditRecord `json:"items"`
	}](t, c.must(0, args...).Stdout).Items
}

type verifyReport struct {
	Kind      string `json:"kind"`
	Context   string `json:"context"`
	KeySource string `json:"key_source"`
	Skew      string `json:"skew"`
	OK        bool   `json:"ok"`
	Header    *struct {
		KID    string `json:"kid"`
		Target string `json:"target"`
		Fault  string `json:"fault"`
		Exp    int64  `json:"exp"`
		JTI    string `json:"jti"`
	} `json:"header"`
	Checks []struct {
		Check   string `json:"check"`
		Outcome string `json:"outcome"`
		Field   string `json:"field"`
		Reason  string `json:"reason"`
	} `json:"checks"`
}

func (r verifyReport) outcome(check string) string {
	for _, c := range r.Checks {
		if c.Check == check {
			return c.Outcome
		}
	}
	return "missing"
}

type signed struct {
	Kind      string `json:"kind"`
	Context   string `json:"context"`
	KeySource string `json:"key_source"`
	Header    string `json:"header"`
	Value     string `json:"value"`
	Fields    struct {
		KID    string  `json:"kid"`
		Target string  `json:"target"`
		Fault  string  `json:"fault"`
		Ms     int     `json:"ms"`
		P      float64 `json:"p"`
		Exp    int64   `json:"exp"`
		JTI    string  `json:"jti"`
	} `json:"fields"`
	IssuedAt  string `json:"issued_at"`
	ExpiresAt string `json:"expires_at"`
	TTL       string `json:"ttl"`
	AuditID   string `json:"audit_id"`
}

// sigOf returns the sig field of a header value.
func sigOf(t *testing.T, value string) string {
	t.Helper()
	_, sig, ok := strings.Cut(value, ";sig=")
	if !ok {
		t.Fatalf("no sig in %q", value)
	}
	return sig
}

// keyForms returns the spellings of a key someone might leak: the stored
// standard base64, the raw bytes, base64url and hex.
func keyForms(t *testing.T, stored string) []string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(stored))
	if err != nil || len(raw) < 32 {
		t.Fatalf("stored key is not base64 of 32+ bytes: %v", err)
	}
	return []string{
		strings.TrimSpace(stored),
		strings.TrimRight(strings.TrimSpace(stored), "="),
		string(raw),
		base64.RawURLEncoding.EncodeToString(raw),
		hex.EncodeToString(raw),
	}
}

// assertNoKey fails if any spelling of the key appears in anything the
// tool printed.
func assertNoKey(t *testing.T, c *cli, stored string) {
	t.Helper()
	forms := keyForms(t, stored)
	for _, out := range c.printed {
		for _, f := range forms {
			if strings.Contains(out, f) {
				t.Fatalf("key material (%d-byte form) appeared in output:\n%s", len(f), out)
			}
		}
	}
}

// localKeyPath returns where the local context keeps its chaos key.
func (c *cli) localKeyPath() string { return filepath.Join(c.StateDir(), "chaos.key") }

// localKey returns the local context's stored key (standard base64).
func (c *cli) localKey(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(c.localKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeKey writes a fresh key file with mode and returns its path and
// content.
func writeKey(t *testing.T, dir string, mode os.FileMode) (string, string) {
	t.Helper()
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i*37 + 11) //nolint:gosec // G115: wraps on purpose, for a spread of byte values
	}
	content := base64.StdEncoding.EncodeToString(raw) + "\n"
	path := filepath.Join(dir, "ci-chaos.key")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode passes through umask
		t.Fatal(err)
	}
	return path, content
}
