package migrate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// A request decided before decided ones stayed in the lists index (its
// item out of it) is missing from request list --all until store migrate
// puts it in its partition; migrate says so, and then --all lists it.
func TestMigrateIndexesRequestsDecidedBefore(t *testing.T) {
	t.Parallel()
	endpoint := moto.Start(t)
	e := clitest.New(t, clitest.Parallel())
	e.UseDynamoDB(endpoint, "kosha-control")
	e.MustRun(0, "store", "init")
	e.MustRun(0, "policy", "set", "../../../../docs/policies/four-eyes.cedar", "--reason", "four eyes")
	e.MustRun(12, "breaker", "force-open", "openai", "--reason", "incident", "--for", "30m")
	var doc struct {
		Requests []struct {
			ID string `json:"id"`
		} `json:"requests"`
	}
	if err := json.Unmarshal([]byte(e.MustRun(0, "request", "list", "-o", "json").Stdout), &doc); err != nil || len(doc.Requests) != 1 {
		t.Fatalf("request list: %+v, %v", doc, err)
	}
	id := doc.Requests[0].ID
	e.MustRun(0, "request", "cancel", id, "--reason", "never mind")

	// As a koshactl before this one wrote it: decided, in no partition.
	s := dynamo.NewFromConfig(moto.Config(t, endpoint), "kosha-control")
	ctx := context.Background()
	it, err := s.Get(ctx, approval.RequestPrefix+id)
	if err != nil || it.Str(store.IndexLists.Attr) != approval.ClosedRequests {
		t.Fatalf("the canceled request: %v, %v; want it in %s", it, err, approval.ClosedRequests)
	}
	delete(it, store.IndexLists.Attr)
	delete(it, store.IndexLists.Sort)
	if err := s.Put(ctx, it, store.Always()); err != nil {
		t.Fatal(err)
	}
	if r := e.MustRun(0, "request", "list", "--all"); strings.Contains(r.Stdout, id) {
		t.Fatalf("--all lists %s before the backfill:\n%s", id, r.Stdout)
	}
	if r := e.MustRun(0, "store", "migrate"); !strings.Contains(r.Stdout, "change requests and reviews: 1 examined, indexed 1") {
		t.Errorf("migrate does not say it indexed the request:\n%s", r.Stdout)
	}
	if r := e.MustRun(0, "request", "list", "--all"); !strings.Contains(r.Stdout, id) || !strings.Contains(r.Stdout, "canceled") {
		t.Errorf("--all after migrate:\n%s", r.Stdout)
	}
}
