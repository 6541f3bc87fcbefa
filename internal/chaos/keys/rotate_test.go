package keys_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

var epoch = time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)

// seeded returns a fake on clk whose secret holds two keys, K-1 (AWSPREVIOUS)
// and K0 (AWSCURRENT), both old enough to rotate, and K0.
func seeded(t *testing.T, clk *clocktest.Fake) (*smfake.Server, chaos.Key) {
	t.Helper()
	fake := smfake.New(t, clk)
	fake.Create(secretID)
	var k0 chaos.Key
	for range 2 {
		k, err := chaos.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		fake.PutRaw(secretID, k.ExportBase64(), false)
		k0 = k
	}
	clk.Advance(time.Hour)
	return fake, k0
}

// barrier lets n PutSecretValue calls through only once all n are waiting,
// so every rotation has read AWSCURRENT before any writes: the race the
// compare-and-set must survive.
type barrier struct {
	keys.SecretsManagerAPI
	wg *sync.WaitGroup
}

func (b barrier) PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error) {
	b.wg.Done()
	b.wg.Wait()
	return b.SecretsManagerAPI.PutSecretValue(ctx, in, optFns...)
}

func TestConcurrentRotationsHaveOneWinner(t *testing.T) {
	ctx := context.Background()
	for round := range 5 { // the SDK's scheduling varies; the outcome must not
		clk := clocktest.NewFake(epoch)
		fake, k0 := seeded(t, clk)
		client := newSMClient(fake, 1)
		src := keys.NewSecretsManager(client, secretID).WithPropagation(clk, 0)

		// A header signed before either rotation, with the signing key then.
		minter, err := chaos.NewMinter(src, chaos.MinterOptions{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		before, err := minter.Mint(ctx, chaos.MintRequest{Target: chaos.TargetOpenAI, Fault: chaos.FaultError})
		if err != nil || before.Header.KID != k0.KID() {
			t.Fatalf("mint before: kid %s, %v; want K0", before.Header.KID, err)
		}
		v0 := fake.Stages(secretID)[keys.StageCurrent]

		var wg sync.WaitGroup
		wg.Add(2)
		var results [2]keys.Rotation
		var errs [2]error
		var done sync.WaitGroup
		for i := range 2 {
			done.Go(func() {
				op := keys.NewSecretsManager(barrier{client, &wg}, secretID).WithPropagation(clk, 0)
				results[i], errs[i] = op.Rotate(ctx, keys.RotateOptions{})
			})
		}
		done.Wait()

		winner, loser := 0, 1
		if errs[0] != nil {
			winner, loser = 1, 0
		}
		if errs[winner] != nil {
			t.Fatalf("round %d: both rotations failed: %v; %v", round, errs[0], errs[1])
		}
		var ce *keys.ConflictError
		if !errors.Is(errs[loser], keys.ErrConflict) || !errors.As(errs[loser], &ce) {
			t.Fatalf("round %d: second rotation: %v, want a conflict", round, errs[loser])
		}
		w := results[winner]
		if ce.ReadVersionID != v0 || ce.CurrentVersionID != w.VersionID || ce.CurrentKID != w.Current.KID() {
			t.Errorf("round %d: conflict %+v does not name the read version %s and the winner %s", round, ce, v0, w.VersionID)
		}
		if w.PreviousVersionID != v0 || !w.Previous.Equal(k0) {
			t.Errorf("round %d: winner reports replacing %s (%s), want K0's version %s", round, w.PreviousVersionID, w.Previous, v0)
		}
		st := fake.Stages(secretID)
		if st[keys.StageCurrent] != w.VersionID || st[keys.StagePrevious] != v0 {
			t.Errorf("round %d: stages %v, want AWSCURRENT on the winner %s and AWSPREVIOUS on K0's %s", round, st, w.VersionID, v0)
		}
		if _, ok := st[keys.StagePending]; ok {
			t.Errorf("round %d: a stray AWSPENDING is left: %v", round, st)
		}
		for _, v := range fake.Versions(secretID) {
			if v.ID == ce.NewVersionID && len(v.Stages) != 0 {
				t.Errorf("round %d: the loser's version keeps labels %v", round, v.Stages)
			}
		}
		ver, err := chaos.NewVerifier(src, chaos.Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ver.Verify(ctx, before.Value()); err != nil {
			t.Errorf("round %d: the header signed before both rotations no longer verifies: %v", round, err)
		}
		after, err := minter.Mint(ctx, chaos.MintRequest{Target: chaos.TargetOpenAI, Fault: chaos.FaultError})
		if err != nil || after.Header.KID != w.Current.KID() {
			t.Errorf("round %d: signing after the rotation uses kid %s (%v), want the winner's", round, after.Header.KID, err)
		}
	}
}

func TestRotationRefusedWhileCurrentIsYoung(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.NewFake(epoch)
	fake := smfake.New(t, clk)
	fake.Create(secretID)
	src := keys.NewSecretsManager(newSMClient(fake, 1), secretID).WithPropagation(clk, 5*time.Minute)
	if got := src.MinRotationAge(); got != 21*time.Minute {
		t.Fatalf("min rotation age %s, want 16m header lifetime + 5m delay", got)
	}
	// The first key of an empty secret is never refused.
	first, err := src.Rotate(ctx, keys.RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Minute)
	puts := fake.Calls("PutSecretValue")
	_, err = src.Rotate(ctx, keys.RotateOptions{})
	var tse *keys.TooSoonError
	if !errors.Is(err, keys.ErrTooSoon) || !errors.As(err, &tse) {
		t.Fatalf("rotation of a 20m-old key: %v, want ErrTooSoon", err)
	}
	allowed := epoch.Add(21 * time.Minute)
	if !tse.AllowedAt.Equal(allowed) || tse.VersionID != first.VersionID {
		t.Errorf("refusal %+v, want allowed at %s", tse, allowed)
	}
	msg := err.Error()
	for _, want := range []string{allowed.Format(time.RFC3339), "--force", "20m old"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if fake.Calls("PutSecretValue") != puts {
		t.Error("a refused rotation wrote a version")
	}
	if _, err := src.Rotate(ctx, keys.RotateOptions{Force: true}); err != nil {
		t.Fatalf("forced rotation: %v", err)
	}
	clk.Advance(21*time.Minute - time.Second)
	if _, err := src.Rotate(ctx, keys.RotateOptions{}); !errors.Is(err, keys.ErrTooSoon) {
		t.Errorf("one second early: %v, want ErrTooSoon", err)
	}
	clk.Advance(time.Second)
	if _, err := src.Rotate(ctx, keys.RotateOptions{}); err != nil {
		t.Errorf("at the allowed time: %v", err)
	}
}

func TestSigningKeyDuringPropagationDelay(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.NewFake(epoch)
	fake, k0 := seeded(t, clk)
	const delay = 5 * time.Minute
	src := keys.NewSecretsManager(newSMClient(fake, 1), secretID).WithPropagation(clk, delay)
	if cur, err := src.Current(ctx); err != nil || !cur.Equal(k0) {
		t.Fatalf("before rotating: signs with %s, %v; want K0", cur, err)
	}
	r, err := src.Rotate(ctx, keys.RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(delay); !r.SignsFrom.Equal(want) {
		t.Errorf("rotation says the new key signs from %s, want %s", r.SignsFrom, want)
	}
	ver, err := chaos.NewVerifier(src, chaos.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	minter, err := chaos.NewMinter(src, chaos.MinterOptions{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after time.Duration
		want  chaos.Key
	}{
		{0, k0}, {delay - time.Second, k0}, {delay, r.Current}, {time.Hour, r.Current},
	} {
		at := clocktest.NewFake(r.Created.Add(tc.after))
		s := src.WithPropagation(at, delay)
		m, err := chaos.NewMinter(s, chaos.MinterOptions{Clock: at})
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.Mint(ctx, chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError})
		if err != nil || h.Header.KID != tc.want.KID() {
			t.Errorf("%s after rotating: signed with kid %s (%v), want %s", tc.after, h.Header.KID, err, tc.want.KID())
		}
	}
	// Verification accepts both keys throughout.
	for _, k := range []chaos.Key{k0, r.Current} {
		if _, err := src.ByKID(ctx, k.KID()); err != nil {
			t.Errorf("kid %s does not verify during the delay: %v", k.KID(), err)
		}
	}
	h, err := minter.Mint(ctx, chaos.MintRequest{Target: chaos.TargetCoreAPI, Fault: chaos.FaultError})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ver.Verify(ctx, h.Value()); err != nil {
		t.Errorf("a header signed during the delay: %v", err)
	}

	// Without a previous key there is nothing else to sign with.
	clk2 := clocktest.NewFake(epoch)
	empty := smfake.New(t, clk2)
	empty.Create(secretID)
	src2 := keys.NewSecretsManager(newSMClient(empty, 1), secretID).WithPropagation(clk2, delay)
	r2, err := src2.Rotate(ctx, keys.RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := src2.Current(ctx); err != nil || !cur.Equal(r2.Current) {
		t.Errorf("first key during its delay: %s, %v; want it (there is no other)", cur, err)
	}
}

func TestFailedRotationLeavesNoPendingVersion(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.NewFake(epoch)
	fake, k0 := seeded(t, clk)
	src := keys.NewSecretsManager(newSMClient(fake, 1), secretID).WithPropagation(clk, 0)
	before := fake.Stages(secretID)
	fake.Fail("UpdateSecretVersionStage", 500, "InternalServiceError", 1) // the AWSCURRENT move
	_, err := src.Rotate(ctx, keys.RotateOptions{})
	if !errors.Is(err, keys.ErrUnavailable) || errors.Is(err, keys.ErrConflict) {
		t.Fatalf("failed move: %v, want unavailable (not a conflict: AWSCURRENT did not move)", err)
	}
	st := fake.Stages(secretID)
	if _, ok := st[keys.StagePending]; ok || st[keys.StageCurrent] != before[keys.StageCurrent] || st[keys.StagePrevious] != before[keys.StagePrevious] {
		t.Errorf("stages after a failed rotation %v, want %v and no AWSPENDING", st, before)
	}
	if cur, _ := src.Current(ctx); !cur.Equal(k0) {
		t.Error("a failed rotation changed the signing key")
	}
}

func TestRotationMovedUnderneathIsAConflict(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.NewFake(epoch)
	fake, _ := seeded(t, clk)
	client := newSMClient(fake, 1)
	src := keys.NewSecretsManager(client, secretID).WithPropagation(clk, 0)
	var other keys.Rotation
	fake.BeforeNext("PutSecretValue", func() {
		var err error
		if other, err = keys.NewSecretsManager(client, secretID).Rotate(ctx, keys.RotateOptions{Force: true}); err != nil {
			t.Errorf("the other operator's rotation: %v", err)
		}
	})
	_, err := src.Rotate(ctx, keys.RotateOptions{})
	if !errors.Is(err, keys.ErrConflict) || !strings.Contains(err.Error(), other.VersionID) {
		t.Fatalf("rotation after another moved AWSCURRENT: %v, want a conflict naming %s", err, other.VersionID)
	}
	st := fake.Stages(secretID)
	if st[keys.StageCurrent] != other.VersionID || slices.Contains(mapKeys(st), keys.StagePending) {
		t.Errorf("stages %v: want the other rotation's version current and no AWSPENDING", st)
	}
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
