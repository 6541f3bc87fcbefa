package smfake

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
)

// The service's documented limits the fake enforces.
const (
	// MaxLabelsPerVersion is how many staging labels one version may carry.
	MaxLabelsPerVersion = 20
	// PruneAbove is the version count past which unlabeled versions are
	// deleted.
	PruneAbove = 100
	// PruneMinAge is how old an unlabeled version must be to be deleted.
	PruneMinAge = 24 * time.Hour
)

// Stage names the service attaches by itself.
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
	StagePending  = "AWSPENDING"
)

// Version is one stored version of a secret.
type Version struct {
	ID      string
	Value   string
	Binary  bool
	Stages  []string
	Created time.Time
}

// Call is one request the fake served.
type Call struct {
	// Op is the operation, e.g. "PutSecretValue".
	Op   string
	Body map[string]any
}

type failure struct {
	op     string // "" matches any
	status int
	code   string
	times  int // -1 forever
}

// Server is the fake. Its zero value is not usable; call [New].
type Server struct {
	// URL is the endpoint to point a client at.
	URL string
	// Region and Account are those of the secrets' ARNs (default eu-west-1,
	// 123456789012). Set them before the first request.
	Region, Account string
	// Authorize, when set, is asked before each request, as IAM would be:
	// the action ("secretsmanager:GetSecretValue") on the secret's ARN, and
	// for a secret under a customer-managed key the KMS action Secrets
	// Manager makes on the caller's behalf (kms:Decrypt to read,
	// kms:GenerateDataKey to write) on the key, with kms:ViaService and
	// kms:EncryptionContext:SecretARN. A non-empty answer is the message of
	// the AccessDeniedException the request gets instead.
	Authorize func(action, resource string, context map[string][]string) (denied string)

	t     testing.TB
	clock clock.Clock
	srv   *httptest.Server

	mu       sync.Mutex
	secrets  map[string][]*Version // oldest first
	failures []failure
	calls    []Call
	before   map[string][]func()
	nextID   int
	kmsKeys  map[string]string // secret name → customer-managed key ARN
}

// New starts a fake on a free loopback port, stopped when the test ends.
// clk stamps versions; nil means the real clock.
func New(t testing.TB, clk clock.Clock) *Server {
	t.Helper()
	if clk == nil {
		clk = clock.Real{}
	}
	s := &Server{t: t, clock: clk, secrets: map[string][]*Version{}, before: map[string][]func(){}, kmsKeys: map[string]string{},
		Region: "eu-west-1", Account: "123456789012"}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, nil) }))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// Principal starts another endpoint onto the same secrets for a second
// caller (the data plane beside the CLI): its requests are asked of
// authorize instead of [Server.Authorize], as IAM evaluates each caller's
// own policy. It is stopped when the test ends.
func (s *Server) Principal(authorize func(action, resource string, context map[string][]string) (denied string)) (url string) {
	if authorize == nil { // this caller is allowed everything, whatever Authorize says
		authorize = func(string, string, map[string][]string) string { return "" }
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, authorize) }))
	s.t.Cleanup(srv.Close)
	return srv.URL
}

// Close stops the server: later requests fail to connect.
func (s *Server) Close() { s.srv.Close() }

// Create makes a secret with no versions (create-secret without a value).
func (s *Server) Create(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.secrets[name]; !ok {
		s.secrets[name] = []*Version{}
	}
}

// SetKMSKey encrypts the secret name under the customer-managed key keyARN:
// reading and writing its value then also need the KMS permissions
// [Server.Authorize] is asked about.
func (s *Server) SetKMSKey(name, keyARN string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kmsKeys[name] = keyARN
}

// PutRaw stores a version as the console or CLI would (PutSecretValue
// without stages: it becomes AWSCURRENT) and returns its id.
func (s *Server) PutRaw(name, value string, binary bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.secrets[name]; !ok {
		s.secrets[name] = []*Version{}
	}
	s.nextID++
	v := &Version{ID: fmt.Sprintf("v%04d-0000-4000-8000-000000000000", s.nextID), Value: value, Binary: binary, Created: s.clock.Now()}
	s.secrets[name] = append(s.secrets[name], v)
	s.attach(name, v, StageCurrent)
	s.prune(name)
	return v.ID
}

// Fail answers the next times calls of op ("" for any; -1 times forever)
// with an error of status and code.
func (s *Server) Fail(op string, status int, code string, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{op, status, code, times})
}

// BeforeNext runs fn once, just before the next call of op is served, with
// the fake unlocked (fn may use the fake, or another client, to change the
// secret first).
func (s *Server) BeforeNext(op string, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before[op] = append(s.before[op], fn)
}

// Calls returns how many op calls were served ("" counts all).
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if op == "" || c.Op == op {
			n++
		}
	}
	return n
}

// LastCall returns the last op call, failing the test if there was none.
func (s *Server) LastCall(op string) Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.calls) - 1; i >= 0; i-- {
		if s.calls[i].Op == op {
			return s.calls[i]
		}
	}
	s.t.Fatalf("smfake: no %s call", op)
	return Call{}
}

// Stages maps each staging label of secret name to the version holding it.
func (s *Server) Stages(name string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, v := range s.secrets[name] {
		for _, st := range v.Stages {
			out[st] = v.ID
		}
	}
	return out
}

// Versions returns copies of the versions of secret name, oldest first.
func (s *Server) Versions(name string) []Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Version, 0, len(s.secrets[name]))
	for _, v := range s.secrets[name] {
		c := *v
		c.Stages = slices.Clone(v.Stages)
		out = append(out, c)
	}
	return out
}

// Values returns every value ever stored and still kept, in all secrets.
func (s *Server) Values() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, vs := range s.secrets {
		for _, v := range vs {
			out = append(out, v.Value)
		}
	}
	return out
}

// apiError is a service error to answer with.
type apiError struct {
	status int
	code   string
	msg    string
}

func errf(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// serve answers one request; authorize, when set, replaces s.Authorize (a
// [Server.Principal] endpoint).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, authorize func(action, resource string, context map[string][]string) string) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		s.t.Errorf("smfake: unexpected %s %s", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		s.t.Errorf("smfake: %s: Content-Type %q, want application/x-amz-json-1.1", op, ct)
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "/secretsmanager/aws4_request") {
		s.t.Errorf("smfake: %s: request not SigV4-signed for secretsmanager: %q", op, auth)
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("smfake: %s: body %q: %v", op, raw, err)
	}

	s.mu.Lock()
	hooks := s.before[op]
	delete(s.before, op)
	s.mu.Unlock()
	for _, fn := range hooks {
		fn()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{Op: op, Body: body})
	for i := range s.failures {
		f := &s.failures[i]
		if f.times != 0 && (f.op == "" || f.op == op) {
			if f.times > 0 {
				f.times--
			}
			writeErr(w, &apiError{status: f.status, code: f.code, msg: "injected " + f.code})
			return
		}
	}
	if authorize == nil {
		authorize = s.Authorize
	}
	if aerr := s.authorize(authorize, op, body); aerr != nil {
		writeErr(w, aerr)
		return
	}
	var (
		out  map[string]any
		aerr *apiError
	)
	switch op {
	case "GetSecretValue":
		out, aerr = s.getSecretValue(body)
	case "PutSecretValue":
		out, aerr = s.putSecretValue(body)
	case "UpdateSecretVersionStage":
		out, aerr = s.updateSecretVersionStage(body)
	default:
		s.t.Errorf("smfake: unexpected call %s", op)
		aerr = errf("UnknownOperationException", "%s", op)
	}
	if aerr != nil {
		writeErr(w, aerr)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func str(body map[string]any, k string) string { v, _ := body[k].(string); return v }

func (s *Server) secret(body map[string]any) (string, []*Version, *apiError) {
	name := str(body, "SecretId")
	vs, ok := s.secrets[name]
	if !ok {
		return name, nil, errf("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
	}
	return name, vs, nil
}

func find(vs []*Version, id string) *Version {
	for _, v := range vs {
		if v.ID == id {
			return v
		}
	}
	return nil
}

func holder(vs []*Version, stage string) *Version {
	for _, v := range vs {
		if slices.Contains(v.Stages, stage) {
			return v
		}
	}
	return nil
}

func (s *Server) arn(name string) string {
	return "arn:aws:secretsmanager:" + s.Region + ":" + s.Account + ":secret:" + name + "-AbCdEf"
}

// authorize asks authorize what IAM would about op on the secret the body
// names: nil when allowed.
func (s *Server) authorize(authorize func(action, resource string, context map[string][]string) string, op string, body map[string]any) *apiError {
	if authorize == nil {
		return nil
	}
	name := str(body, "SecretId")
	secretARN := s.arn(name)
	if msg := authorize("secretsmanager:"+op, secretARN, nil); msg != "" {
		return errf("AccessDeniedException", "%s", msg)
	}
	key, ok := s.kmsKeys[name]
	if !ok {
		return nil
	}
	var kmsAction string
	switch op {
	case "GetSecretValue":
		kmsAction = "kms:Decrypt"
	case "PutSecretValue":
		kmsAction = "kms:GenerateDataKey"
	default:
		return nil
	}
	ctx := map[string][]string{"kms:ViaService": {"secretsmanager." + s.Region + ".amazonaws.com"},
		"kms:EncryptionContext:SecretARN": {secretARN}}
	if msg := authorize(kmsAction, key, ctx); msg != "" {
		// What Secrets Manager answers when KMS refuses it the key.
		return errf("AccessDeniedException", "Access to KMS is not allowed")
	}
	return nil
}

func (s *Server) getSecretValue(body map[string]any) (map[string]any, *apiError) {
	name, vs, aerr := s.secret(body)
	if aerr != nil {
		return nil, aerr
	}
	stage, id := str(body, "VersionStage"), str(body, "VersionId")
	var v *Version
	switch {
	case id != "":
		v = find(vs, id)
		if v != nil && stage != "" && !slices.Contains(v.Stages, stage) {
			v = nil
		}
	default:
		if stage == "" {
			stage = StageCurrent
		}
		v = holder(vs, stage)
	}
	if v == nil {
		return nil, errf("ResourceNotFoundException", "Secrets Manager can't find the specified secret value for VersionId: %q staging label: %q", id, stage)
	}
	out := map[string]any{"ARN": s.arn(name), "Name": name, "VersionId": v.ID, "VersionStages": slices.Clone(v.Stages),
		"CreatedDate": float64(v.Created.UnixMilli()) / 1000}
	if v.Binary {
		out["SecretBinary"] = base64.StdEncoding.EncodeToString([]byte(v.Value))
	} else {
		out["SecretString"] = v.Value
	}
	return out, nil
}

func validLabel(l string) *apiError {
	if l == "" || len(l) > 256 {
		return errf("InvalidParameterException", "staging label %q must be 1 to 256 characters", l)
	}
	return nil
}

func (s *Server) putSecretValue(body map[string]any) (map[string]any, *apiError) {
	name, vs, aerr := s.secret(body)
	if aerr != nil {
		return nil, aerr
	}
	token, value := str(body, "ClientRequestToken"), str(body, "SecretString")
	if token == "" {
		// The SDK fills in a UUID when the caller leaves it out.
		var b [16]byte
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}
	if len(token) < 32 || len(token) > 64 {
		return nil, errf("InvalidParameterException", "ClientRequestToken must be 32 to 64 characters")
	}
	var stages []string
	raw, given := body["VersionStages"].([]any)
	for _, x := range raw {
		l, _ := x.(string)
		if aerr := validLabel(l); aerr != nil {
			return nil, aerr
		}
		if !slices.Contains(stages, l) {
			stages = append(stages, l)
		}
	}
	if len(stages) > MaxLabelsPerVersion {
		return nil, errf("LimitExceededException", "a version can have at most %d staging labels", MaxLabelsPerVersion)
	}
	if v := find(vs, token); v != nil {
		if v.Value != value || v.Binary {
			return nil, errf("ResourceExistsException", "A resource with the ID you requested already exists: version %s has different contents", token)
		}
		return map[string]any{"ARN": s.arn(name), "Name": name, "VersionId": v.ID, "VersionStages": slices.Clone(v.Stages)}, nil
	}
	if !given {
		stages = []string{StageCurrent}
	}
	if len(vs) == 0 && !slices.Contains(stages, StageCurrent) {
		stages = append(stages, StageCurrent) // the first version is always current
	}
	v := &Version{ID: token, Value: value, Created: s.clock.Now()}
	s.secrets[name] = append(vs, v)
	for _, l := range stages {
		s.attach(name, v, l)
	}
	s.prune(name)
	return map[string]any{"ARN": s.arn(name), "Name": name, "VersionId": v.ID, "VersionStages": slices.Clone(v.Stages)}, nil
}

// attach moves label to v, and AWSPREVIOUS to the version AWSCURRENT left.
func (s *Server) attach(name string, v *Version, label string) {
	if slices.Contains(v.Stages, label) {
		return
	}
	from := holder(s.secrets[name], label)
	if from != nil {
		from.Stages = slices.DeleteFunc(from.Stages, func(x string) bool { return x == label })
	}
	v.Stages = append(v.Stages, label)
	if label == StageCurrent && from != nil {
		if p := holder(s.secrets[name], StagePrevious); p != nil {
			p.Stages = slices.DeleteFunc(p.Stages, func(x string) bool { return x == StagePrevious })
		}
		from.Stages = append(from.Stages, StagePrevious)
	}
}

// prune deletes unlabeled versions older than PruneMinAge, oldest first,
// while the secret has more than PruneAbove versions.
func (s *Server) prune(name string) {
	vs := s.secrets[name]
	now := s.clock.Now()
	for i := 0; len(vs) > PruneAbove && i < len(vs); {
		if len(vs[i].Stages) == 0 && now.Sub(vs[i].Created) >= PruneMinAge {
			vs = slices.Delete(vs, i, i+1)
			continue
		}
		i++
	}
	s.secrets[name] = vs
}

func (s *Server) updateSecretVersionStage(body map[string]any) (map[string]any, *apiError) {
	name, vs, aerr := s.secret(body)
	if aerr != nil {
		return nil, aerr
	}
	label, moveTo, removeFrom := str(body, "VersionStage"), str(body, "MoveToVersionId"), str(body, "RemoveFromVersionId")
	if aerr := validLabel(label); aerr != nil {
		return nil, aerr
	}
	cur := holder(vs, label)
	out := map[string]any{"ARN": s.arn(name), "Name": name}
	if moveTo == "" {
		if removeFrom == "" {
			return nil, errf("InvalidParameterException", "give MoveToVersionId, RemoveFromVersionId or both")
		}
		if cur == nil || cur.ID != removeFrom {
			return nil, errf("InvalidParameterException", "staging label %s is not attached to version %s", label, removeFrom)
		}
		if label == StageCurrent {
			return nil, errf("InvalidParameterException", "you can't remove the staging label AWSCURRENT; move it to another version instead")
		}
		cur.Stages = slices.DeleteFunc(cur.Stages, func(x string) bool { return x == label })
		return out, nil
	}
	target := find(vs, moveTo)
	if target == nil {
		return nil, errf("ResourceNotFoundException", "Secrets Manager can't find the specified secret version %s", moveTo)
	}
	if cur == target {
		return out, nil
	}
	if cur != nil && cur.ID != removeFrom {
		return nil, errf("InvalidParameterException",
			"staging label %s is attached to version %s; RemoveFromVersionId must name it (got %q)", label, cur.ID, removeFrom)
	}
	if cur == nil && removeFrom != "" {
		return nil, errf("InvalidParameterException", "staging label %s is not attached to version %s", label, removeFrom)
	}
	if len(target.Stages) >= MaxLabelsPerVersion {
		return nil, errf("LimitExceededException", "a version can have at most %d staging labels", MaxLabelsPerVersion)
	}
	s.attach(name, target, label)
	return out, nil
}

func writeErr(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.msg})
}
