package dynamo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.yaml.in/yaml/v3"

	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/store/dynamo"
	"github.com/kosha-platform/koshactl/internal/store/dynamo/dynamotest"
	"github.com/kosha-platform/koshactl/internal/testutil/moto"
)

// tableDef is a table's definition in one shape for the three sources: the
// requests store init sends, the CloudFormation template, the Terraform
// module.
type tableDef struct {
	Attributes         map[string]string // name → S, N, B
	Key                []string          // "pk HASH", then "sk RANGE"
	Billing            string
	Indexes            map[string]indexDef
	IndexOrder         []string // the indexes' names in the order declared
	TTL                string   // the TTL attribute, "" when off
	PITR               bool
	DeletionProtection bool
}

type indexDef struct {
	Key        []string
	Projection string
	NonKey     []string
}

// recordingAPI passes store init's requests to moto and keeps the
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
	return r.API.UpdateTimeToLive(ctx, in, o...)
}

// storeInitDef runs store init's code against moto and returns the
// definition it created the table with.
func storeInitDef(t *testing.T) tableDef {
	t.Helper()
	rec := &recordingAPI{API: dynamodb.NewFromConfig(moto.Config(t, endpoint))}
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
		d.IndexOrder = append(d.IndexOrder, aws.ToString(g.IndexName))
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

// cloudFormationTemplate reads the CloudFormation template as YAML values.
func cloudFormationTemplate(t *testing.T) map[string]any {
	t.Helper()
	var tpl map[string]any
	if err := yaml.Unmarshal(readDeploy(t, "cloudformation", "kosha-control.yaml"), &tpl); err != nil {
		t.Fatalf("CloudFormation template: %v", err)
	}
	return tpl
}

// cfnEval resolves the template as CloudFormation would for the given
// parameter values (the template's defaults for the others): Conditions
// (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition), Fn::If, Ref to a
// parameter, and Ref AWS::NoValue removing the property or list element.
// Other intrinsics are left as they are; a malformed one fails the test.
func cfnEval(t *testing.T, tpl map[string]any, params map[string]string) map[string]any {
	t.Helper()
	values := map[string]string{}
	ps, _ := tpl["Parameters"].(map[string]any)
	for name, p := range ps {
		def, _ := p.(map[string]any)["Default"].(string)
		values[name] = def
		if v, ok := params[name]; ok {
			values[name] = v
		}
	}
	for name := range params {
		if _, ok := ps[name]; !ok {
			t.Fatalf("CloudFormation template has no parameter %s", name)
		}
	}
	condDefs, _ := tpl["Conditions"].(map[string]any)
	conds := map[string]bool{}
	var cond func(any) bool
	cond = func(n any) bool {
		m, ok := n.(map[string]any)
		if !ok || len(m) != 1 {
			t.Fatalf("CloudFormation condition %v: not one function", n)
		}
		for fn, arg := range m {
			args, _ := arg.([]any)
			switch fn {
			case "Condition":
				name, _ := arg.(string)
				if _, ok := condDefs[name]; !ok {
					t.Fatalf("CloudFormation: unknown condition %q", name)
				}
				return cond(condDefs[name])
			case "Fn::Equals":
				if len(args) != 2 {
					t.Fatalf("Fn::Equals %v: want two values", arg)
				}
				var vs [2]string
				for i, a := range args {
					if r, ok := a.(map[string]any); ok {
						name, _ := r["Ref"].(string)
						v, known := values[name]
						if !known {
							t.Fatalf("Fn::Equals: Ref to %q, not a parameter", name)
						}
						vs[i] = v
					} else {
						vs[i], _ = a.(string)
					}
				}
				return vs[0] == vs[1]
			case "Fn::Not":
				if len(args) != 1 {
					t.Fatalf("Fn::Not %v: want one condition", arg)
				}
				return !cond(args[0])
			case "Fn::And", "Fn::Or":
				if len(args) < 2 || len(args) > 10 {
					t.Fatalf("%s %v: want 2 to 10 conditions", fn, arg)
				}
				and := fn == "Fn::And"
				for _, a := range args {
					if cond(a) != and {
						return !and
					}
				}
				return and
			}
			t.Fatalf("CloudFormation condition: unsupported %s", fn)
		}
		return false
	}
	for name, c := range condDefs {
		conds[name] = cond(c)
	}
	// eval returns the resolved node, or false for AWS::NoValue.
	var eval func(n any) (any, bool)
	eval = func(n any) (any, bool) {
		switch v := n.(type) {
		case map[string]any:
			if len(v) == 1 {
				if ref, ok := v["Ref"].(string); ok {
					if ref == "AWS::NoValue" {
						return nil, false
					}
					if p, ok := values[ref]; ok {
						return p, true
					}
					return v, true // a resource or pseudo parameter
				}
				if args, ok := v["Fn::If"].([]any); ok {
					name, _ := args[0].(string)
					on, known := conds[name]
					if len(args) != 3 || !known {
						t.Fatalf("Fn::If %v: want a known condition and two values", args)
					}
					if on {
						return eval(args[1])
					}
					return eval(args[2])
				}
			}
			out := map[string]any{}
			for k, e := range v {
				if r, ok := eval(e); ok {
					out[k] = r
				}
			}
			return out, true
		case []any:
			out := []any{}
			for _, e := range v {
				if r, ok := eval(e); ok {
					out = append(out, r)
				}
			}
			return out, true
		}
		return n, true
	}
	out := map[string]any{}
	for k, v := range tpl {
		if k == "Conditions" {
			continue
		}
		r, _ := eval(v)
		out[k] = r
	}
	return out
}

// cloudFormationDef reads the table resource of the CloudFormation
// template, resolved for the given parameters.
func cloudFormationDef(t *testing.T, params map[string]string) tableDef {
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
	b, err := json.Marshal(cfnEval(t, cloudFormationTemplate(t), params))
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
			d.IndexOrder = append(d.IndexOrder, g.IndexName)
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

// terraformModule is the Terraform module's parts the tests read.
type terraformModule struct {
	Variable map[string]struct {
		Type    string `json:"type"`
		Default any    `json:"default"`
	} `json:"variable"`
	Locals   map[string]json.RawMessage `json:"locals"`
	Resource struct {
		Table map[string]map[string]json.RawMessage `json:"aws_dynamodb_table"`
	} `json:"resource"`
}

func readTerraform(t *testing.T) terraformModule {
	t.Helper()
	var mod terraformModule
	if err := json.Unmarshal(readDeploy(t, "terraform", "main.tf.json"), &mod); err != nil {
		t.Fatalf("Terraform module: %v", err)
	}
	return mod
}

// The expressions the module's dynamic blocks may use: a for_each over the
// first var.<count> elements of a local list, or over a list field of each
// of them, flattened; and content attributes that are literals, the
// iterated element's fields, or the element itself. terraformDef evaluates
// these and fails on any other, so the module cannot grow an expression the
// test does not understand.
var (
	sliceExpr   = regexp.MustCompile(`^\$\{slice\(local\.(\w+), 0, var\.(\w+)\)\}$`)
	flattenExpr = regexp.MustCompile(`^\$\{flatten\(\[for (\w+) in slice\(local\.(\w+), 0, var\.(\w+)\) : (\w+)\.(\w+)\]\)\}$`)
	fieldExpr   = regexp.MustCompile(`^\$\{(\w+)\.value(?:\.(\w+))?\}$`)
)

// dynamicBlocks expands the module's dynamic blocks named name (Terraform's
// dynamic "name" { for_each ... content ... }) for the given variables.
func dynamicBlocks(t *testing.T, mod terraformModule, r map[string]json.RawMessage, name string, vars map[string]float64) []map[string]any {
	t.Helper()
	var dyn map[string]struct {
		ForEach string         `json:"for_each"`
		Content map[string]any `json:"content"`
	}
	if raw, ok := r["dynamic"]; ok {
		if err := json.Unmarshal(raw, &dyn); err != nil {
			t.Fatalf("Terraform dynamic blocks: %v", err)
		}
	}
	d, ok := dyn[name]
	if !ok {
		return nil
	}
	// The slice's local and variable, and, for a flatten, the field of each
	// element that is flattened.
	local, count, field := "", "", ""
	if m := sliceExpr.FindStringSubmatch(d.ForEach); m != nil {
		local, count = m[1], m[2]
	} else if m := flattenExpr.FindStringSubmatch(d.ForEach); m != nil && m[1] == m[4] {
		local, count, field = m[2], m[3], m[5]
	} else {
		t.Fatalf("Terraform dynamic %q: for_each %q is neither ${slice(local.LIST, 0, var.COUNT)} nor "+
			"${flatten([for X in slice(local.LIST, 0, var.COUNT) : X.FIELD])}", name, d.ForEach)
	}
	var list []map[string]any
	if err := json.Unmarshal(mod.Locals[local], &list); err != nil || list == nil {
		t.Fatalf("Terraform dynamic %q: local.%s is not a list of objects (%v)", name, local, err)
	}
	n, ok := vars[count]
	if !ok {
		t.Fatalf("Terraform dynamic %q: var.%s is not a variable", name, count)
	}
	if n < 0 || int(n) > len(list) || n != float64(int(n)) {
		t.Fatalf("Terraform dynamic %q: slice(local.%s, 0, %v) is out of range (Terraform fails the plan)", name, local, n)
	}
	var elems []any
	for _, el := range list[:int(n)] {
		if field == "" {
			elems = append(elems, el)
			continue
		}
		l, ok := el[field].([]any)
		if !ok {
			t.Fatalf("Terraform dynamic %q: local.%s element %v has no list %s", name, local, el, field)
		}
		elems = append(elems, l...)
	}
	var out []map[string]any
	for _, el := range elems {
		b := map[string]any{}
		for k, v := range d.Content {
			s, isStr := v.(string)
			if !isStr || !strings.Contains(s, "${") {
				b[k] = v
				continue
			}
			f := fieldExpr.FindStringSubmatch(s)
			if f == nil || f[1] != name {
				t.Fatalf("Terraform dynamic %q: content %s = %q is not ${%s.value} or ${%s.value.FIELD}", name, k, s, name, name)
			}
			if f[2] == "" {
				b[k] = el
				continue
			}
			obj, _ := el.(map[string]any)
			fv, ok := obj[f[2]]
			if !ok {
				t.Fatalf("Terraform dynamic %q: local.%s element %v has no %s", name, local, el, f[2])
			}
			b[k] = fv
		}
		out = append(out, b)
	}
	return out
}

// terraformDef reads the aws_dynamodb_table of the Terraform module, with
// the variables' defaults overridden by vars.
func terraformDef(t *testing.T, override map[string]float64) tableDef {
	t.Helper()
	mod := readTerraform(t)
	if len(mod.Resource.Table) != 1 {
		t.Fatalf("Terraform module declares %d aws_dynamodb_table resources, want 1", len(mod.Resource.Table))
	}
	var r map[string]json.RawMessage
	for _, v := range mod.Resource.Table {
		r = v
	}
	vars := map[string]float64{}
	for name, v := range mod.Variable {
		if n, ok := v.Default.(float64); ok && v.Type == "number" {
			vars[name] = n
		}
	}
	for name, v := range override {
		if _, ok := vars[name]; !ok {
			t.Fatalf("Terraform module has no number variable %s", name)
		}
		vars[name] = v
	}
	scalars := func(k string) any {
		var v any
		_ = json.Unmarshal(r[k], &v)
		return v
	}
	d := tableDef{Attributes: map[string]string{}, Indexes: map[string]indexDef{}}
	d.Billing, _ = scalars("billing_mode").(string)
	d.DeletionProtection, _ = scalars("deletion_protection_enabled").(bool)
	for _, a := range append(blocks(r["attribute"]), dynamicBlocks(t, mod, r, "attribute", vars)...) {
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
	for _, g := range append(blocks(r["global_secondary_index"]), dynamicBlocks(t, mod, r, "global_secondary_index", vars)...) {
		ix := indexDef{Key: keyOf(g), Projection: str(g, "projection_type")}
		if nk, ok := g["non_key_attributes"].([]any); ok {
			for _, a := range nk {
				s, _ := a.(string)
				ix.NonKey = append(ix.NonKey, s)
			}
		}
		d.Indexes[str(g, "name")] = ix
		d.IndexOrder = append(d.IndexOrder, str(g, "name"))
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
// store init creates (key, attributes, indexes in store init's order,
// billing, TTL attribute), with point-in-time recovery and deletion
// protection on, at their default IndexCount / index_count. At each lower
// stage N they declare exactly the first N of those indexes and their key
// attributes, so each stack update from N-1 to N adds one index.
func TestTemplatesMatchStoreInit(t *testing.T) {
	t.Parallel()
	full := storeInitDef(t)
	full.PITR, full.DeletionProtection = true, true // what AWS adds to the development table
	if len(full.IndexOrder) != len(store.Indexes) {
		t.Fatalf("store init created %d indexes, store.Indexes lists %d", len(full.IndexOrder), len(store.Indexes))
	}
	// stage is the table with the first n of store init's indexes.
	stage := func(n int) tableDef {
		d := full
		d.Attributes = map[string]string{store.PK: full.Attributes[store.PK]}
		d.Indexes = map[string]indexDef{}
		d.IndexOrder = slices.Clone(full.IndexOrder[:n])
		for _, name := range d.IndexOrder {
			ix := full.Indexes[name]
			d.Indexes[name] = ix
			for _, k := range ix.Key {
				attr := strings.Fields(k)[0]
				d.Attributes[attr] = full.Attributes[attr]
			}
		}
		return d
	}
	check := func(name string, got, want tableDef) {
		t.Helper()
		for _, ix := range []map[string]indexDef{got.Indexes, want.Indexes} {
			for k, v := range ix {
				v.NonKey = slices.Sorted(slices.Values(v.NonKey))
				ix[k] = v
			}
		}
		if len(got.IndexOrder) == 0 {
			got.IndexOrder = nil
		}
		if len(want.IndexOrder) == 0 {
			want.IndexOrder = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s differs from store init:\n got %+v\nwant %+v", name, got, want)
		}
	}
	check("CloudFormation template (default IndexCount)", cloudFormationDef(t, nil), full)
	check("Terraform module (default index_count)", terraformDef(t, nil), full)
	for n := 0; n <= len(store.Indexes); n++ {
		want := stage(n)
		check(fmt.Sprintf("CloudFormation template, %s=%d", dynamo.StackIndexParameter, n),
			cloudFormationDef(t, map[string]string{dynamo.StackIndexParameter: strconv.Itoa(n)}), want)
		check(fmt.Sprintf("Terraform module, %s=%d", dynamo.TerraformIndexVariable, n),
			terraformDef(t, map[string]float64{dynamo.TerraformIndexVariable: float64(n)}), want)
	}
}

// The upgrade path store migrate's refusal names exists as it says: the
// README section, the template parameter (0 to len(store.Indexes), default
// all), the Terraform variable, and the steps.
func TestStackUpgradePathDocumented(t *testing.T) {
	readme := string(readDeploy(t, "README.md"))
	heading := "\n## " + dynamo.StackUpgradeSection + "\n"
	i := strings.Index(readme, heading)
	if i < 0 || !strings.HasPrefix(dynamo.StackUpgradeDoc, "deploy/") || filepath.Base(dynamo.StackUpgradeDoc) != "README.md" {
		t.Fatalf("%s has no section %q", dynamo.StackUpgradeDoc, heading)
	}
	section := readme[i+len(heading):]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	for _, want := range []string{dynamo.StackUpgradeSteps(0), "`" + dynamo.StackIndexParameter + "`", "`" + dynamo.TerraformIndexVariable + "`", dynamo.StackNameTag} {
		if !strings.Contains(section, want) {
			t.Errorf("section %q does not say %q", dynamo.StackUpgradeSection, want)
		}
	}
	for _, ix := range store.Indexes {
		if !strings.Contains(section, ix.Name) {
			t.Errorf("section %q does not name index %s", dynamo.StackUpgradeSection, ix.Name)
		}
	}

	var stages []string
	for n := 0; n <= len(store.Indexes); n++ {
		stages = append(stages, strconv.Itoa(n))
	}
	params, _ := cloudFormationTemplate(t)["Parameters"].(map[string]any)
	p, _ := params[dynamo.StackIndexParameter].(map[string]any)
	var allowed []string
	for _, v := range asList(p["AllowedValues"]) {
		s, _ := v.(string)
		allowed = append(allowed, s)
	}
	if p == nil || p["Type"] != "String" || p["Default"] != strconv.Itoa(len(store.Indexes)) || !slices.Equal(allowed, stages) {
		t.Errorf("CloudFormation parameter %s = %v; want a String, AllowedValues %v, Default %d", dynamo.StackIndexParameter, p, stages, len(store.Indexes))
	}
	v, ok := readTerraform(t).Variable[dynamo.TerraformIndexVariable]
	if !ok || v.Type != "number" || v.Default != float64(len(store.Indexes)) {
		t.Errorf("Terraform variable %s = %+v; want a number, default %d", dynamo.TerraformIndexVariable, v, len(store.Indexes))
	}

	for have, want := range []string{"IndexCount=1, then 2, 3, 4, 5", "IndexCount=2, then 3, 4, 5", "IndexCount=3, then 4, 5", "IndexCount=4, then 5", "IndexCount=5"} {
		if got := dynamo.StackUpgradeSteps(have); got != want {
			t.Errorf("StackUpgradeSteps(%d) = %q, want %q", have, got, want)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
