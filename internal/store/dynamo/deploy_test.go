package dynamo_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/dynalite"
)

// tableDef is a table's definition in one shape for the three sources: the
// requests store init sends, the CloudFormation template, the Terraform
// module.
type tableDef struct {
	Attributes         map[string]string // name → S, N, B
	Key                []string          // "pk HASH", then "sk RANGE"
	Billing            string
	Indexes            map[string]indexDef
	TTL                string // the TTL attribute, "" when off
	PITR               bool
	DeletionProtection bool
}

type indexDef struct {
	Key        []string
	Projection string
	NonKey     []string
}

// recordingAPI passes store init's requests to dynalite and keeps the
// table definition they carry.
type recordingAPI struct {
	dynamo.API
	mu     sync.Mutex
	create *dynamodb.CreateTableInput
	ttl    string
}

func (r *recordingAPI) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.mu.Lock()
	r.create = in
	r.mu.Unlock()
	return r.API.CreateTable(ctx, in, o...)
}

func (r *recordingAPI) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	r.mu.Lock()
	if in.TimeToLiveSpecification != nil && aws.ToBool(in.TimeToLiveSpecification.Enabled) {
		r.ttl = aws.ToString(in.TimeToLiveSpecification.AttributeName)
	}
	r.mu.Unlock()
	return r.API.UpdateTimeToLive(ctx, in, o...) // dynalite: unsupported, which Init tolerates
}

// storeInitDef runs store init's code against dynalite and returns the
// definition it created the table with.
func storeInitDef(t *testing.T) tableDef {
	t.Helper()
	rec := &recordingAPI{API: dynamodb.NewFromConfig(dynalite.Config(t, endpoint))}
	if _, err := dynamo.New(rec, dynamotest.TableName(t)).Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := rec.create
	if in == nil {
		t.Fatal("store init sent no CreateTable")
	}
	d := tableDef{Attributes: map[string]string{}, Billing: string(in.BillingMode), Indexes: map[string]indexDef{}, TTL: rec.ttl,
		DeletionProtection: aws.ToBool(in.DeletionProtectionEnabled)}
	for _, a := range in.AttributeDefinitions {
		d.Attributes[aws.ToString(a.AttributeName)] = string(a.AttributeType)
	}
	for _, k := range in.KeySchema {
		d.Key = append(d.Key, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
	}
	for _, g := range in.GlobalSecondaryIndexes {
		ix := indexDef{}
		for _, k := range g.KeySchema {
			ix.Key = append(ix.Key, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		if g.Projection != nil {
			ix.Projection = string(g.Projection.ProjectionType)
			ix.NonKey = g.Projection.NonKeyAttributes
		}
		d.Indexes[aws.ToString(g.IndexName)] = ix
	}
	if d.TTL == "" {
		t.Fatal("store init did not ask for time to live")
	}
	return d
}

func readDeploy(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "..", "deploy"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cloudFormationDef reads the table resource of the CloudFormation template.
func cloudFormationDef(t *testing.T) tableDef {
	t.Helper()
	type key struct{ AttributeName, KeyType string }
	type projection struct {
		ProjectionType   string
		NonKeyAttributes []string
	}
	var tpl struct {
		Resources map[string]struct {
			Type                string
			DeletionPolicy      string
			UpdateReplacePolicy string
			Properties          struct {
				BillingMode            string
				AttributeDefinitions   []struct{ AttributeName, AttributeType string }
				KeySchema              []key
				GlobalSecondaryIndexes []struct {
					IndexName  string
					KeySchema  []key
					Projection projection
				}
				TimeToLiveSpecification struct {
					AttributeName string
					Enabled       bool
				}
				PointInTimeRecoverySpecification struct{ PointInTimeRecoveryEnabled bool }
				DeletionProtectionEnabled        bool
			}
		}
	}
	// Through JSON: CloudFormation's names are capitalized, which
	// encoding/json matches and yaml does not.
	var generic any
	if err := yaml.Unmarshal(readDeploy(t, "cloudformation", "kosha-control.yaml"), &generic); err != nil {
		t.Fatalf("CloudFormation template: %v", err)
	}
	b, err := json.Marshal(generic)
	if err != nil {
		t.Fatalf("CloudFormation template: %v", err)
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatalf("CloudFormation template: %v", err)
	}
	var d *tableDef
	for name, r := range tpl.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		if d != nil {
			t.Fatalf("more than one table in the template (%s)", name)
		}
		if r.DeletionPolicy != "Retain" || r.UpdateReplacePolicy != "Retain" {
			t.Errorf("CloudFormation %s: DeletionPolicy %q, UpdateReplacePolicy %q; want Retain", name, r.DeletionPolicy, r.UpdateReplacePolicy)
		}
		p := r.Properties
		d = &tableDef{Attributes: map[string]string{}, Billing: p.BillingMode, Indexes: map[string]indexDef{},
			PITR: p.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled, DeletionProtection: p.DeletionProtectionEnabled}
		for _, a := range p.AttributeDefinitions {
			d.Attributes[a.AttributeName] = a.AttributeType
		}
		for _, k := range p.KeySchema {
			d.Key = append(d.Key, k.AttributeName+" "+k.KeyType)
		}
		for _, g := range p.GlobalSecondaryIndexes {
			ix := indexDef{Projection: g.Projection.ProjectionType, NonKey: g.Projection.NonKeyAttributes}
			for _, k := range g.KeySchema {
				ix.Key = append(ix.Key, k.AttributeName+" "+k.KeyType)
			}
			d.Indexes[g.IndexName] = ix
		}
		if p.TimeToLiveSpecification.Enabled {
			d.TTL = p.TimeToLiveSpecification.AttributeName
		}
	}
	if d == nil {
		t.Fatal("no AWS::DynamoDB::Table in the CloudFormation template")
	}
	return *d
}

// blocks reads a Terraform JSON nested block, written as one object or a
// list of them.
func blocks(raw json.RawMessage) []map[string]any {
	var one map[string]any
	if json.Unmarshal(raw, &one) == nil && one != nil {
		return []map[string]any{one}
	}
	var many []map[string]any
	_ = json.Unmarshal(raw, &many)
	return many
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// terraformDef reads the aws_dynamodb_table of the Terraform module.
func terraformDef(t *testing.T) tableDef {
	t.Helper()
	var mod struct {
		Resource struct {
			Table map[string]map[string]json.RawMessage `json:"aws_dynamodb_table"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(readDeploy(t, "terraform", "main.tf.json"), &mod); err != nil {
		t.Fatalf("Terraform module: %v", err)
	}
	if len(mod.Resource.Table) != 1 {
		t.Fatalf("Terraform module declares %d aws_dynamodb_table resources, want 1", len(mod.Resource.Table))
	}
	var r map[string]json.RawMessage
	for _, v := range mod.Resource.Table {
		r = v
	}
	scalars := func(k string) any {
		var v any
		_ = json.Unmarshal(r[k], &v)
		return v
	}
	d := tableDef{Attributes: map[string]string{}, Indexes: map[string]indexDef{}}
	d.Billing, _ = scalars("billing_mode").(string)
	d.DeletionProtection, _ = scalars("deletion_protection_enabled").(bool)
	for _, a := range blocks(r["attribute"]) {
		d.Attributes[str(a, "name")] = str(a, "type")
	}
	keyOf := func(m map[string]any) []string {
		k := []string{str(m, "hash_key") + " HASH"}
		if rk := str(m, "range_key"); rk != "" {
			k = append(k, rk+" RANGE")
		}
		return k
	}
	top := map[string]any{}
	top["hash_key"], top["range_key"] = scalars("hash_key"), scalars("range_key")
	d.Key = keyOf(top)
	for _, g := range blocks(r["global_secondary_index"]) {
		ix := indexDef{Key: keyOf(g), Projection: str(g, "projection_type")}
		if nk, ok := g["non_key_attributes"].([]any); ok {
			for _, a := range nk {
				s, _ := a.(string)
				ix.NonKey = append(ix.NonKey, s)
			}
		}
		d.Indexes[str(g, "name")] = ix
	}
	for _, ttl := range blocks(r["ttl"]) {
		if on, _ := ttl["enabled"].(bool); on {
			d.TTL = str(ttl, "attribute_name")
		}
	}
	for _, p := range blocks(r["point_in_time_recovery"]) {
		d.PITR, _ = p["enabled"].(bool)
	}
	for _, l := range blocks(r["lifecycle"]) {
		if keep, _ := l["prevent_destroy"].(bool); !keep {
			t.Error("Terraform: lifecycle.prevent_destroy is not true")
		}
	}
	if len(blocks(r["lifecycle"])) == 0 {
		t.Error("Terraform: no lifecycle { prevent_destroy = true }")
	}
	return d
}

// The CloudFormation template and the Terraform module declare the table
// store init creates (key, attributes, indexes, billing, TTL attribute),
// with point-in-time recovery and deletion protection on.
func TestTemplatesMatchStoreInit(t *testing.T) {
	t.Parallel()
	want := storeInitDef(t)
	want.PITR, want.DeletionProtection = true, true // what AWS adds to the development table
	for name, got := range map[string]tableDef{"CloudFormation": cloudFormationDef(t), "Terraform": terraformDef(t)} {
		for _, ix := range []map[string]indexDef{got.Indexes, want.Indexes} {
			for k, v := range ix {
				slices.Sort(v.NonKey)
				ix[k] = v
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s template differs from store init:\n got %+v\nwant %+v", name, got, want)
		}
	}
}
