package storetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Attr is one attribute as a hand edit with the AWS CLI writes it: its
// DynamoDB type and its text, which need not be anything koshactl would
// write. For "S" the text is the string and for "N" the number's text; for
// the other eight types it is the value in DynamoDB's JSON notation, as it
// follows the type name in `aws dynamodb put-item --item`: BOOL `true`,
// NULL `true`, B `"aGk="`, L `[{"S":"a"},{"N":"1"}]`, M `{"k":{"BOOL":false}}`,
// SS `["a","b"]`, NS `["1","2.5"]`, BS `["aGk="]`.
type Attr struct{ Type, Text string }

// RawItem is attrs as the store API carries them: strings as they are,
// numbers parsed as the backends parse them (store.ParseNumber), other types
// read from DynamoDB's JSON notation (store.UnmarshalTyped).
func RawItem(tb testing.TB, attrs map[string]Attr) store.Item {
	tb.Helper()
	it := store.Item{}
	for k, v := range attrs {
		switch v.Type {
		case "S":
			it[k] = v.Text
		case "N":
			n, err := store.ParseNumber(v.Text)
			if err != nil {
				tb.Fatal(err)
			}
			it[k] = n
		default:
			x, err := store.UnmarshalTyped(fmt.Appendf(nil, `{%q:%s}`, v.Type, v.Text))
			if err != nil {
				tb.Fatalf("attribute %q: %v", k, err)
			}
			it[k] = x
		}
	}
	return it
}

// PutRaw writes attrs to s unconditionally, past every codec of koshactl's
// domain packages.
func PutRaw(tb testing.TB, s store.Store, attrs map[string]Attr) {
	tb.Helper()
	if err := s.Put(context.Background(), RawItem(tb, attrs), store.Always()); err != nil {
		tb.Fatal(err)
	}
}

// PutRawDynamoDB writes attrs to table with PutItem, past the store too: the
// item exactly as a hand edit leaves it. The attribute values are built from
// the text here, with the AWS SDK's types, not with the store's codec.
func PutRawDynamoDB(tb testing.TB, client *dynamodb.Client, table string, attrs map[string]Attr) {
	tb.Helper()
	av := map[string]types.AttributeValue{}
	for k, v := range attrs {
		switch v.Type {
		case "S":
			av[k] = &types.AttributeValueMemberS{Value: v.Text}
		case "N":
			av[k] = &types.AttributeValueMemberN{Value: v.Text}
		default:
			var doc any
			if err := json.Unmarshal(fmt.Appendf(nil, `{%q:%s}`, v.Type, v.Text), &doc); err != nil {
				tb.Fatalf("attribute %q: %v", k, err)
			}
			av[k] = attributeValue(tb, doc)
		}
	}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av}); err != nil {
		tb.Fatal(err)
	}
}

// attributeValue builds the SDK's value of doc, one value in DynamoDB's JSON
// notation as encoding/json reads it.
func attributeValue(tb testing.TB, doc any) types.AttributeValue {
	tb.Helper()
	m, ok := doc.(map[string]any)
	if !ok || len(m) != 1 {
		tb.Fatalf("%v is not one typed DynamoDB value", doc)
	}
	strs := func(v any) []string {
		var out []string
		for _, e := range v.([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	bin := func(s string) []byte {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	for kind, v := range m {
		switch kind {
		case "S":
			return &types.AttributeValueMemberS{Value: v.(string)}
		case "N":
			return &types.AttributeValueMemberN{Value: v.(string)}
		case "BOOL":
			return &types.AttributeValueMemberBOOL{Value: v.(bool)}
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: v.(bool)}
		case "B":
			return &types.AttributeValueMemberB{Value: bin(v.(string))}
		case "L":
			var l []types.AttributeValue
			for _, e := range v.([]any) {
				l = append(l, attributeValue(tb, e))
			}
			return &types.AttributeValueMemberL{Value: l}
		case "M":
			mm := map[string]types.AttributeValue{}
			for name, e := range v.(map[string]any) {
				mm[name] = attributeValue(tb, e)
			}
			return &types.AttributeValueMemberM{Value: mm}
		case "SS":
			return &types.AttributeValueMemberSS{Value: strs(v)}
		case "NS":
			return &types.AttributeValueMemberNS{Value: strs(v)}
		case "BS":
			var bs [][]byte
			for _, s := range strs(v) {
				bs = append(bs, bin(s))
			}
			return &types.AttributeValueMemberBS{Value: bs}
		}
		tb.Fatalf("unknown DynamoDB type %q", kind)
	}
	return nil
}

// EveryType is one attribute of each of DynamoDB's ten types, nested lists
// and maps included, as a hand edit writes them (names "t_s", "t_n", …).
var EveryType = map[string]Attr{
	"t_s":    {Type: "S", Text: "note"},
	"t_n":    {Type: "N", Text: "42.5"},
	"t_b":    {Type: "B", Text: `"AAEC/w=="`},
	"t_bool": {Type: "BOOL", Text: "true"},
	"t_null": {Type: "NULL", Text: "true"},
	"t_l":    {Type: "L", Text: `[{"S":"a"},{"N":"1"},{"BOOL":false},{"NULL":true},{"L":[{"B":"aGk="}]},{"M":{"x":{"SS":["p","q"]}}}]`},
	"t_m":    {Type: "M", Text: `{"owner":{"S":"team-a"},"n":{"N":"-3"},"nested":{"M":{"ok":{"BOOL":true},"ns":{"NS":["1","2.5"]}}}}`},
	"t_ss":   {Type: "SS", Text: `["blue","green"]`},
	"t_ns":   {Type: "NS", Text: `["7","0.25"]`},
	"t_bs":   {Type: "BS", Text: `["aGk=","AA=="]`},
}

// TypeOf names v's DynamoDB type ("S", "N", "BOOL", …), or "" when v is not
// a value the store holds.
func TypeOf(v any) string {
	switch v.(type) {
	case string:
		return "S"
	case int64, int, float64, store.Number:
		return "N"
	case store.Bool:
		return "BOOL"
	case store.Null:
		return "NULL"
	case store.Binary:
		return "B"
	case store.List:
		return "L"
	case store.Map:
		return "M"
	case store.StringSet:
		return "SS"
	case store.NumberSet:
		return "NS"
	case store.BinarySet:
		return "BS"
	}
	return ""
}

// AttributeValues is it as the AWS SDK's values, built from each value's
// DynamoDB JSON notation (store.MarshalTyped), not with the DynamoDB
// store's codec.
func AttributeValues(tb testing.TB, it store.Item) map[string]types.AttributeValue {
	tb.Helper()
	av := make(map[string]types.AttributeValue, len(it))
	for k, v := range it {
		b, err := store.MarshalTyped(v)
		if err != nil {
			tb.Fatalf("attribute %q: %v", k, err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			tb.Fatalf("attribute %q: %v", k, err)
		}
		av[k] = attributeValue(tb, doc)
	}
	return av
}

// With is a copy of it with each attribute of kv (name, value, name,
// value, ...) set, or removed where its value is nil: the one way the
// malformed-item tables write "this item, but with that attribute wrong".
func With(it store.Item, kv ...any) store.Item {
	out := maps.Clone(it)
	for i := 0; i < len(kv); i += 2 {
		name := kv[i].(string)
		if kv[i+1] == nil {
			delete(out, name)
			continue
		}
		out[name] = kv[i+1]
	}
	return out
}

// WriteProblems writes each of problems on a line of its own, indented:
// "  <pk> | <attribute> | <problem>", the one form the malformed-item
// tables' golden files list a decoder's problems in.
func WriteProblems(b *strings.Builder, problems []store.Problem) {
	for _, p := range problems {
		fmt.Fprintf(b, "  %s | %s | %s\n", p.PK, p.Attribute, p.Problem)
	}
}
