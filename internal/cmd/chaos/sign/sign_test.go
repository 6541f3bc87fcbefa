package sign_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/cmd/chaos/sign"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/iostreams"
	"github.com/kosha-platform/koshactl/internal/store"
)

func TestFlagDefaults(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := &cmdenv.Factory{IOStreams: ios}
	var got *sign.Options
	cmd := sign.NewCmd(f, func(_ context.Context, o *sign.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--target", "openai", "--fault", "error"})
	cmd.SetOut(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.TTL != 5*time.Minute || got.P != chaos.ProbOne || got.Output != sign.FormatHeader || got.MsSet || got.KeyFile != "" {
		t.Errorf("defaults = %+v", got)
	}
	req, err := got.Request()
	if err != nil || req.Target != chaos.TargetOpenAI || req.Fault != chaos.FaultError || req.TTL != chaos.DefaultTTL {
		t.Errorf("request = %+v, %v", req, err)
	}

	got = nil
	cmd = sign.NewCmd(f, func(_ context.Context, o *sign.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--target", "core-api", "--fault", "latency", "--ms", "250", "--p", ".25", "--ttl", "15m", "--key-file", "k", "-o", "curl"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.MsSet || got.Ms != 250 || got.P != chaos.Prob(2500) || got.TTL != 15*time.Minute || got.KeyFile != "k" || got.Output != "curl" {
		t.Errorf("parsed = %+v", got)
	}

	// Flag problems are caught before the run function.
	called := false
	cmd = sign.NewCmd(f, func(context.Context, *sign.Options) error { called = true; return nil })
	cmd.SetArgs([]string{"--target", "core-api", "--fault", "error", "--ttl", "20m"})
	cmd.SetErr(io.Discard)
	err = cmd.Execute()
	if called || exitcode.Of(err) != exitcode.Usage || !errors.Is(err, chaos.ErrTTL) {
		t.Errorf("ttl 20m: called=%v err=%v", called, err)
	}
}

// brokenStore fails every write, as a store that went away would.
type brokenStore struct{ store.Store }

func (brokenStore) Transact(context.Context, store.Change) error {
	return fmt.Errorf("transact: %w", store.ErrUnavailable)
}

// Get fails too: the append's re-read after a failed put finds no store.
// The freeze item read first, the store still answered: there is none.
func (brokenStore) Get(_ context.Context, pk string) (store.Item, error) {
	if pk == freeze.Key {
		return nil, store.ErrNotFound
	}
	return nil, fmt.Errorf("get item: %w", store.ErrUnavailable)
}

func (brokenStore) Describe() string { return "broken test store" }

func TestHeaderIsNotPrintedWhenTheMintCannotBeAudited(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	dir := t.TempDir()
	clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	f := &cmdenv.Factory{
		IOStreams: ios,
		Clock:     clk,
		Env: func(context.Context) (*cmdenv.Env, error) {
			return &cmdenv.Env{Name: "local", Context: config.BuiltinLocal(), Store: brokenStore{}, StateDir: dir, Clock: clk,
				Actor: func(context.Context) (string, error) { return "tester@test", nil }}, nil
		},
	}
	err := sign.Run(context.Background(), f, &sign.Options{Target: "openai", Fault: "error", P: chaos.ProbOne, TTL: time.Minute, Output: sign.FormatHeader})
	if exitcode.Of(err) != exitcode.Unknown || !errors.Is(err, audit.ErrAuditWrite) {
		t.Fatalf("exit %d, err %v; want 8 (unknown: the store could not be reached) wrapping ErrAuditWrite", exitcode.Of(err), err)
	}
	for _, want := range []string{"was signed but is not printed", "must not be used unaudited", "broken test store", "jti "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if out.Len() != 0 || strings.Contains(errOut.String(), "v=2;") || strings.Contains(err.Error(), "sig=") {
		t.Errorf("an unaudited header escaped: stdout %q, stderr %q", out, errOut)
	}
	key, rerr := os.ReadFile(filepath.Join(dir, "chaos.key"))
	if rerr != nil || strings.Contains(err.Error(), strings.TrimSpace(string(key))) {
		t.Errorf("key file %v, or the key is in the error", rerr)
	}
}
