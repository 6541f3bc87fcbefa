package iamtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/store"
)

// DynamoDBRequests is what AWS authorizes for one DynamoDB operation (op,
// as in X-Amz-Target: "GetItem") with its JSON body, on the tables of t's
// region and account: one request per table the body names.
func DynamoDBRequests(t iam.Target, op string, body []byte) ([]Request, error) {
	type attr struct {
		S string `json:"S"`
	}
	var in struct {
		TableName, IndexName                  string
		Key, Item                             map[string]attr
		KeyConditionExpression                string
		ConditionExpression, UpdateExpression string
		ExpressionAttributeNames              map[string]string
		ExpressionAttributeValues             map[string]attr
		RequestItems                          map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("dynamodb %s: body: %w", op, err)
	}
	arn := func(table string) string {
		return fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", t.Partition(), t.Region, t.Account, table)
	}
	action := "dynamodb:" + op
	leading := func(pks ...string) map[string][]string { return map[string][]string{"dynamodb:LeadingKeys": pks} }
	switch op {
	case "GetItem":
		return []Request{{action, arn(in.TableName), leading(in.Key[store.PK].S)}}, nil
	case "DeleteItem", "UpdateItem":
		ctx := leading(in.Key[store.PK].S)
		ctx[attributesKey] = attributeNames(in.Key, in.ExpressionAttributeNames, in.ConditionExpression, in.UpdateExpression)
		return []Request{{action, arn(in.TableName), ctx}}, nil
	case "PutItem":
		ctx := leading(in.Item[store.PK].S)
		ctx[attributesKey] = attributeNames(in.Item, in.ExpressionAttributeNames, in.ConditionExpression)
		return []Request{{action, arn(in.TableName), ctx}}, nil
	case "Query":
		res, hash := arn(in.TableName), store.PK
		if in.IndexName != "" {
			res += "/index/" + in.IndexName
			hash = ""
			for _, ix := range store.Indexes {
				if ix.Name == in.IndexName {
					hash = ix.Attr
				}
			}
		}
		var pk []string
		for _, term := range strings.Split(in.KeyConditionExpression, " AND ") {
			name, value, ok := strings.Cut(term, " = ")
			name = strings.TrimSpace(name)
			if n, ok := in.ExpressionAttributeNames[name]; ok {
				name = n
			}
			if ok && name == hash {
				pk = append(pk, in.ExpressionAttributeValues[strings.TrimSpace(value)].S)
			}
		}
		return []Request{{action, res, leading(pk...)}}, nil
	case "Scan":
		res := arn(in.TableName)
		if in.IndexName != "" {
			res += "/index/" + in.IndexName
		}
		return []Request{{Action: action, Resource: res}}, nil
	case "BatchGetItem", "BatchWriteItem":
		var out []Request
		for table, raw := range in.RequestItems {
			var pks []string
			if op == "BatchGetItem" {
				var ka struct{ Keys []map[string]attr }
				if err := json.Unmarshal(raw, &ka); err != nil {
					return nil, fmt.Errorf("dynamodb %s: RequestItems: %w", op, err)
				}
				for _, k := range ka.Keys {
					pks = append(pks, k[store.PK].S)
				}
			} else {
				var ws []struct {
					PutRequest    *struct{ Item map[string]attr }
					DeleteRequest *struct{ Key map[string]attr }
				}
				if err := json.Unmarshal(raw, &ws); err != nil {
					return nil, fmt.Errorf("dynamodb %s: RequestItems: %w", op, err)
				}
				for _, w := range ws {
					if w.PutRequest != nil {
						pks = append(pks, w.PutRequest.Item[store.PK].S)
					}
					if w.DeleteRequest != nil {
						pks = append(pks, w.DeleteRequest.Key[store.PK].S)
					}
				}
			}
			out = append(out, Request{action, arn(table), leading(pks...)})
		}
		return out, nil
	case "TransactWriteItems":
		// AWS authorizes each action of a transaction as the single-item
		// operation it is (PutItem, UpdateItem, DeleteItem; a
		// ConditionCheck as dynamodb:ConditionCheckItem), each with its own
		// key and with dynamodb:EnclosingOperation = TransactWriteItems (a
		// PutItem sent alone has no such key): one denied action denies the
		// whole call.
		var tx struct {
			TransactItems []map[string]struct {
				TableName                             string
				Key, Item                             map[string]attr
				ConditionExpression, UpdateExpression string
				ExpressionAttributeNames              map[string]string
			}
		}
		if err := json.Unmarshal(body, &tx); err != nil {
			return nil, fmt.Errorf("dynamodb %s: TransactItems: %w", op, err)
		}
		var out []Request
		for _, ti := range tx.TransactItems {
			for kind, w := range ti {
				pk := w.Key[store.PK].S
				if kind == "Put" {
					pk = w.Item[store.PK].S
				}
				a, ok := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
					"ConditionCheck": "ConditionCheckItem"}[kind]
				if !ok {
					return nil, fmt.Errorf("dynamodb %s: unknown action %q", op, kind)
				}
				ctx := leading(pk)
				ctx["dynamodb:EnclosingOperation"] = []string{op}
				ctx[attributesKey] = attributeNames(w.Item, w.ExpressionAttributeNames, w.ConditionExpression, w.UpdateExpression)
				if kind != "Put" {
					ctx[attributesKey] = attributeNames(w.Key, w.ExpressionAttributeNames, w.ConditionExpression, w.UpdateExpression)
				}
				out = append(out, Request{"dynamodb:" + a, arn(w.TableName), ctx})
			}
		}
		return out, nil
	case "ListTagsOfResource":
		// The table named by the ARN, in t's account: the endpoint behind
		// the proxy (moto) answers DescribeTable with ARNs of its own
		// account.
		var tags struct{ ResourceArn string }
		_ = json.Unmarshal(body, &tags)
		_, table, _ := strings.Cut(tags.ResourceArn, ":table/")
		return []Request{{Action: action, Resource: arn(table)}}, nil
	}
	// Table operations (DescribeTable, CreateTable, UpdateTable, the TTL
	// pair): the table.
	return []Request{{Action: action, Resource: arn(in.TableName)}}, nil
}

// attributesKey is DynamoDB's condition key of the attribute names a
// request names.
const attributesKey = "dynamodb:Attributes"

// attributeNames is dynamodb:Attributes of a write: the top-level
// attribute names of its item (or key), and those its expressions name,
// by placeholder (#name, resolved through names) or as they are, each
// once, sorted.
func attributeNames[V any](item map[string]V, names map[string]string, exprs ...string) []string {
	var out []string
	add := func(n string) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for n := range item {
		add(n)
	}
	for _, ex := range exprs {
		for _, tok := range expressionNames(ex) {
			if strings.HasPrefix(tok, "#") {
				tok = names[tok]
			}
			add(tok)
		}
	}
	slices.Sort(out)
	return out
}

// expressionNames are the top-level attribute names of a condition or
// update expression: each path's first element (a #placeholder or a
// name), not the functions it calls, its keywords, nor its :values.
func expressionNames(ex string) []string {
	keywords := []string{"AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE"}
	var out []string
	for i := 0; i < len(ex); {
		c := ex[i]
		switch {
		case c == ':':
			for i++; i < len(ex) && isNameByte(ex[i]); i++ {
			}
		case c == '#' || isNameByte(c) && (c < '0' || c > '9'):
			start := i
			for i++; i < len(ex) && isNameByte(ex[i]); i++ {
			}
			tok := ex[start:i]
			j := i
			for j < len(ex) && ex[j] == ' ' {
				j++
			}
			if (j < len(ex) && ex[j] == '(') || slices.Contains(keywords, strings.ToUpper(tok)) {
				continue
			}
			out = append(out, tok)
			// The rest of the path (.child, [n]) names no top-level attribute.
			for i < len(ex) && (ex[i] == '.' || ex[i] == '[' || ex[i] == ']' || ex[i] == '#' || isNameByte(ex[i])) {
				i++
			}
		default:
			i++
		}
	}
	return out
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Proxy is a DynamoDB endpoint in front of moto that enforces a policy
// and lets a test see every operation. A context's endpoint-url is the
// endpoint of every service, so Secrets Manager requests go on to SM and
// CloudWatch requests to CW unexamined: those fakes enforce their own.
type Proxy struct {
	URL string
	// Target locates the tables' ARNs.
	Target iam.Target
	// Enforcer decides; its zero value allows everything.
	Enforcer *Enforcer
	// OnRequest, when set, sees each DynamoDB operation and its body
	// before it is authorized.
	OnRequest func(op string, body []byte)

	mu   sync.Mutex
	lose func(op string, body []byte) bool
	lost int
}

// LoseAnswers makes the proxy lose the answer of every DynamoDB request
// for which lose returns true (nil: none): the request is authorized and
// forwarded, the server applies it, and the client's connection is then
// reset without a byte of the answer, as a network that drops it would.
func (p *Proxy) LoseAnswers(lose func(op string, body []byte) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose = lose
}

// Lost is how many answers the proxy lost.
func (p *Proxy) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// losing reports whether the answer to op with body is to be lost, and
// counts it.
func (p *Proxy) losing(op string, body []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lose == nil || !p.lose(op, body) {
		return false
	}
	p.lost++
	return true
}

// NewProxy starts a proxy to moto at target, forwarding Secrets Manager
// requests to sm and CloudWatch's to cw ("" for none), closed when the test
// ends.
func NewProxy(t testing.TB, target, sm, cw string, tg iam.Target, e *Enforcer) *Proxy {
	t.Helper()
	p := &Proxy{Target: tg, Enforcer: e}
	client := &http.Client{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		service, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		to, lose := target, false
		switch {
		case service == "secretsmanager":
			to = sm
		case strings.HasPrefix(r.URL.Path, "/service/GraniteServiceVersion20100801/") && cw != "":
			to = cw
		default:
			if p.OnRequest != nil {
				p.OnRequest(op, body)
			}
			reqs, err := DynamoDBRequests(p.Target, op, body)
			if err != nil {
				t.Errorf("iamtest proxy: %v", err)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if msg := p.Enforcer.AuthorizeKey(AccessKeyOf(r), reqs...); msg != "" {
				WriteDynamoDBAccessDenied(w, msg)
				return
			}
			lose = p.losing(op, body)
		}
		//nolint:gosec // G704: forwards to the test's own moto or fake on loopback
		req, err := http.NewRequestWithContext(r.Context(), r.Method, to+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := client.Do(req) //nolint:gosec // G704: the test's own loopback servers
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		if lose {
			_, _ = io.Copy(io.Discard, resp.Body) // applied: the answer is lost
			resetConn(t, w)
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// AccessKeyOf is the access key id a SigV4-signed request was signed with
// (its Authorization header's Credential), "" when it names none.
func AccessKeyOf(r *http.Request) string {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(cred, "/")
	return key
}

// resetConn closes the client's connection with a TCP reset, sending
// nothing.
func resetConn(t testing.TB, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("iamtest proxy: losing an answer: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// WriteDynamoDBAccessDenied answers as DynamoDB does (JSON 1.0, HTTP 400,
// the body's CRC32 in X-Amz-Crc32, which the SDK checks): the SDK surfaces
// an APIError with code AccessDeniedException.
func WriteDynamoDBAccessDenied(w http.ResponseWriter, msg string) {
	body, _ := json.Marshal(map[string]string{"__type": "com.amazon.coral.service#AccessDeniedException", "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}
