package keys_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
)

var _ keys.Source = (*keys.Static)(nil)

func TestStaticAndSnapshot(t *testing.T) {
	ctx := context.Background()
	cur, _ := chaos.GenerateKey(nil)
	prev, _ := chaos.GenerateKey(nil)
	src := keys.NewStatic("test keys", cur, prev)
	if k, err := src.ByKID(ctx, prev.KID()); err != nil || !k.Equal(prev) {
		t.Errorf("ByKID previous: %v", err)
	}
	if _, err := src.ByKID(ctx, "AAAAAAAAAAA"); !errors.Is(err, chaos.ErrUnknownKID) {
		t.Errorf("ByKID unknown: %v", err)
	}
	ks, err := keys.Snapshot(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := ks.Current(ctx); !k.Equal(cur) {
		t.Error("snapshot signs with the wrong key")
	}
	if _, err := ks.ByKID(ctx, prev.KID()); err != nil {
		t.Errorf("snapshot lost the previous key: %v", err)
	}
	if only := keys.NewStatic("one", cur, chaos.Key{}); len(mustKeys(t, only)) != 1 {
		t.Error("a zero previous key was kept")
	}
}

func mustKeys(t *testing.T, s keys.Source) []keys.Staged {
	t.Helper()
	st, err := s.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRotateHelper(t *testing.T) {
	ctx := context.Background()
	k, _ := chaos.GenerateKey(nil)
	_, err := keys.Rotate(ctx, keys.NewStatic("test keys", k, chaos.Key{}), keys.RotateOptions{})
	if !errors.Is(err, keys.ErrNotRotatable) || !strings.Contains(err.Error(), "test keys") {
		t.Errorf("static source: %v", err)
	}
	if _, err := keys.Rotate(ctx, keys.NewEnvLookup("X", func(string) (string, bool) { return "", false }), keys.RotateOptions{}); !errors.Is(err, keys.ErrNotRotatable) {
		t.Errorf("env source: %v", err)
	}
	r, err := keys.Rotate(ctx, keys.NewLocal(t.TempDir()), keys.RotateOptions{})
	if err != nil || r.Current.IsZero() {
		t.Errorf("local source: %+v, %v", r, err)
	}
}
