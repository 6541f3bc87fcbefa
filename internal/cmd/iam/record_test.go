package iam_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/iam/iamtest"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
	"github.com/kosha-platform/koshactl/internal/notify/snsfake"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// recorder is what one koshactl process asked of AWS: DynamoDB operations
// with the key prefix of the item they touched (seen on the wire by a proxy
// in front of moto), and the other services' operations (seen by the
// SDK's own middleware, from the --debug log).
type recorder struct {
	mu    sync.Mutex
	needs []iam.Need
}

func (r *recorder) add(n iam.Need) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.needs, n) {
		r.needs = append(r.needs, n)
	}
}

// has reports whether n was recorded since the last take.
func (r *recorder) has(n iam.Need) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.needs, n)
}

// take returns what was recorded since the last take and forgets it.
func (r *recorder) take() []iam.Need {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.needs
	r.needs = nil
	return out
}

// testTarget is where the tests' policies point: moto's region, the
// fakes' account, the contexts' table and chaos secret.
var testTarget = iam.Target{Region: moto.Region, Account: "123456789012", Table: "kosha-control", //nolint:gosec // G101: a secret's name, not its value
	Secret: "kosha/chaos/dev", Namespace: "Kosha/Resilience", Topics: []string{notifyTopic}}

// dynamoProxy starts an iamtest proxy in front of moto at target that
// records each DynamoDB operation with the prefix of every pk it names
// (Key, Item, each key of a batch, or a scan's :prefix filter value; each
// action of a transaction as the single-item write AWS authorizes it as)
// and enforces enf's policy on the tables of tg. Secrets Manager requests
// (a context's endpoint-url is the endpoint of every service) go to sm, and
// CloudWatch's to cw, unrecorded: the --debug log records them, and those
// fakes enforce enf themselves.
func dynamoProxy(t *testing.T, target, sm, cw string, tg iam.Target, enf *iamtest.Enforcer) (*iamtest.Proxy, *recorder) {
	t.Helper()
	rec := &recorder{}
	p := iamtest.NewProxy(t, target, sm, cw, tg, enf)
	p.OnRequest = func(op string, body []byte) {
		if op == iam.TransactWriteItems {
			reqs, err := iamtest.DynamoDBRequests(tg, op, body)
			if err != nil {
				rec.add(iam.Need{Action: "dynamodb:" + op, Prefix: "?"})
				return
			}
			for _, r := range reqs {
				for _, pk := range r.Context["dynamodb:LeadingKeys"] {
					prefix := iamtest.PrefixOf(pk)
					if r.Action == iam.PutItem {
						prefix = iamtest.WritePrefixOf(pk) // a proof: its writer's own, by verb
					}
					rec.add(iam.Need{Action: r.Action, Prefix: prefix, Transaction: true})
				}
			}
			return
		}
		for _, prefix := range keyPrefixes(body) {
			rec.add(iam.Need{Action: "dynamodb:" + op, Prefix: prefix})
		}
	}
	return p, rec
}

// keyPrefixes are the item kinds ("breaker#", "audit#dp#") a DynamoDB
// request body names, or one "" for a request naming none.
func keyPrefixes(body []byte) []string {
	type attr struct {
		S string `json:"S"`
	}
	var in struct {
		Key, Item                 map[string]attr
		ExpressionAttributeValues map[string]attr
		RequestItems              map[string]struct{ Keys []map[string]attr }
	}
	if json.Unmarshal(body, &in) != nil {
		return []string{"?"}
	}
	pks := []string{in.Key["pk"].S + in.Item["pk"].S + in.ExpressionAttributeValues[":prefix"].S}
	if len(in.RequestItems) > 0 {
		pks = nil
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				pks = append(pks, k["pk"].S)
			}
		}
	}
	var out []string
	for _, pk := range pks {
		if pk != "" {
			pk = iamtest.PrefixOf(pk)
		}
		if !slices.Contains(out, pk) {
			out = append(out, pk)
		}
	}
	return out
}

// debugNeeds reads the non-DynamoDB operations from a --debug log: lines
// "debug: aws SERVICE OPERATION: ...". STS GetCallerIdentity needs no
// permission and is left out.
func debugNeeds(stderr string) []iam.Need {
	services := map[string]string{"secrets manager": "secretsmanager", "cloudwatch": "cloudwatch", "sns": "sns"}
	var out []iam.Need
	for _, l := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(l, "debug: aws ")
		if !ok {
			continue
		}
		call, _, _ := strings.Cut(rest, ":")
		i := strings.LastIndexByte(call, ' ')
		if i < 0 {
			continue
		}
		if svc, ok := services[call[:i]]; ok {
			n := iam.Need{Action: svc + ":" + call[i+1:]}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// sameNeeds reports the difference between what was called and what the
// table declares, or "" when they are the same set.
func sameNeeds(called, declared []iam.Need) string {
	var missing, extra []string
	for _, n := range called {
		if !slices.Contains(declared, n) {
			missing = append(missing, n.String())
		}
	}
	for _, n := range declared {
		if !slices.Contains(called, n) {
			extra = append(extra, n.String())
		}
	}
	if len(missing)+len(extra) == 0 {
		return ""
	}
	return fmt.Sprintf("called but not in iam.Commands(): %v; in iam.Commands() but not called: %v", missing, extra)
}

// newFakeSM starts the Secrets Manager fake (the service's version-stage
// rules) holding the context's chaos secret, still empty, enforcing enf.
func newFakeSM(t *testing.T, clk clock.Clock, enf *iamtest.Enforcer) *smfake.Server {
	t.Helper()
	sm := smfake.New(t, clk)
	sm.Region, sm.Account = testTarget.Region, testTarget.Account
	sm.Authorize = enf.Check
	sm.Create("kosha/chaos/dev")
	return sm
}

// newFakeSNS starts the SNS fake (Publish's documented limits) holding the
// contexts' notification topic, enforcing enf.
func newFakeSNS(t *testing.T, enf *iamtest.Enforcer) *snsfake.Server {
	t.Helper()
	s := snsfake.Start(t, notifyTopic)
	s.Authorize = enf.Check
	return s
}

// newFakeCW starts the CloudWatch fake enforcing enf.
func newFakeCW(t *testing.T, enf *iamtest.Enforcer) *cwfake.Server {
	t.Helper()
	cw := cwfake.New(t)
	cw.Authorize = enf.Check
	return cw
}

// policyOf is role's policy on tg, as `iam policy` renders it.
func policyOf(t *testing.T, role iam.Role, tg iam.Target) *iam.Document {
	t.Helper()
	doc, err := iam.Policy(role, tg)
	if err != nil {
		t.Fatal(err)
	}
	return &doc
}

// smallestRole is the first role (in iam.Roles order) whose paths include
// path.
func smallestRole(path string) iam.Role {
	for _, r := range iam.Roles {
		if slices.Contains(iam.RolePaths[r], path) {
			return r
		}
	}
	return ""
}

// withoutAction is doc with action removed from statement i (and the
// statement dropped when it held nothing else).
func withoutAction(doc iam.Document, i int, action string) *iam.Document {
	out := iam.Document{Version: doc.Version}
	for j, s := range doc.Statement {
		if j == i {
			s.Action = slices.DeleteFunc(slices.Clone(s.Action), func(a string) bool { return a == action })
			if len(s.Action) == 0 {
				continue
			}
		}
		out.Statement = append(out.Statement, s)
	}
	return &out
}
