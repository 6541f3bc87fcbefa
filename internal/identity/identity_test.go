package identity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/store"
)

const callerARN = "arn:aws:iam::123456789012:user/ops"

// stsAnswer is how the fake STS answers GetCallerIdentity.
type stsAnswer struct {
	status int
	code   string // error code; empty with status 200 is a success
	body   string // raw body instead of the XML the code implies
}

// fakeSTS serves GetCallerIdentity in STS's query protocol with answer and
// counts requests.
func fakeSTS(t *testing.T, a stsAnswer) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "text/xml")
		body := a.body
		switch {
		case body != "":
		case a.code != "":
			body = fmt.Sprintf(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>m for %s</Message></Error><RequestId>r1</RequestId></ErrorResponse>`, a.code, a.code)
		case r.Form.Get("Action") == "GetCallerIdentity":
			body = `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>` + callerARN +
				`</Arn><UserId>AIDAOPS</UserId><Account>123456789012</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>r1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`
		default:
			a.status = http.StatusBadRequest
		}
		status := a.status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

func client(endpoint string) *sts.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIAENV", "secret", "")}
	return sts.NewFromConfig(cfg, identity.ClientOptions, func(o *sts.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestVerifiedCallerARN(t *testing.T) {
	for _, allow := range []bool{false, true} {
		url, _ := fakeSTS(t, stsAnswer{})
		id, err := identity.Resolver{STS: client(url), Endpoint: url, AllowUnverified: allow}.Resolve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if id.Actor != callerARN || id.Source != audit.ActorSTS || !id.Verified() || id.UserID != "AIDAOPS" {
			t.Errorf("allow unverified %v: identity %+v, want the verified caller ARN and its unique id", allow, id)
		}
	}
}

// An answer without the caller's unique id names no one a proof can be
// keyed by: it is an error, never an identity without one.
func TestAnswerWithoutUniqueIDIsRefused(t *testing.T) {
	url, _ := fakeSTS(t, stsAnswer{body: `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>` +
		callerARN + `</Arn><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`})
	id, err := identity.Resolver{STS: client(url), Endpoint: url}.Resolve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "unique id") {
		t.Fatalf("identity %+v, %v: want an error naming the missing unique id", id, err)
	}
}

func TestFailuresAreClassified(t *testing.T) {
	refused := "http://127.0.0.1:1" // nothing listens on port 1
	for _, tc := range []struct {
		name     string
		answer   *stsAnswer // nil: unreachable
		kind     identity.Kind
		sentinel error
		fix      string
		fallback bool // an endpoint context uses the asserted identity
	}{
		{"unreachable", nil, identity.Unreachable, store.ErrUnavailable, "check the network", true},
		{"404 like dynalite", &stsAnswer{status: 404, body: "<UnknownOperationException/>"}, identity.NotServed, store.ErrUnavailable, "--service-endpoint sts=URL", true},
		{"unknown operation", &stsAnswer{status: 400, code: "UnknownOperationException"}, identity.NotServed, store.ErrUnavailable, "--service-endpoint sts=URL", true},
		{"answers but not STS", &stsAnswer{status: 200, body: "{}"}, identity.NotServed, store.ErrUnavailable, "--service-endpoint sts=URL", true},
		{"throttled", &stsAnswer{status: 400, code: "Throttling"}, identity.Throttled, store.ErrThrottled, "wait a few seconds", false},
		{"denied", &stsAnswer{status: 403, code: "InvalidClientTokenId"}, identity.Denied, store.ErrCredentials, "check which credentials", false},
		{"expired", &stsAnswer{status: 400, code: "ExpiredToken"}, identity.Expired, store.ErrCredentials, "aws sso login", false},
		{"server error", &stsAnswer{status: 500, code: "InternalFailure"}, identity.Unreachable, store.ErrUnavailable, "check the network", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := refused
			if tc.answer != nil {
				url, _ = fakeSTS(t, *tc.answer)
			}
			r := identity.Resolver{STS: client(url), Endpoint: url, Context: "dev", Timeout: 5 * time.Second}
			_, err := r.Resolve(context.Background())
			var ie *identity.Error
			if !errors.As(err, &ie) {
				t.Fatalf("AWS context: err = %v (%T), want *identity.Error", err, err)
			}
			if ie.Kind != tc.kind || !errors.Is(err, tc.sentinel) {
				t.Errorf("kind %v (matches %v: %v), want %v", ie.Kind, tc.sentinel, errors.Is(err, tc.sentinel), tc.kind)
			}
			msg := err.Error()
			if !strings.Contains(msg, url) || !strings.Contains(msg, tc.fix) || strings.Contains(msg, "\n") {
				t.Errorf("message should name %s and the fix %q on one line: %s", url, tc.fix, msg)
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("message leaks the secret key: %s", msg)
			}

			r.AllowUnverified = true
			r.Getenv = env(map[string]string{"KOSHACTL_ACTOR": "ci-job-7"})
			id, err := r.Resolve(context.Background())
			if tc.fallback {
				if err != nil || id.Actor != "ci-job-7" || id.Source != audit.ActorUnverified {
					t.Errorf("endpoint context: %+v, %v; want the asserted, unverified actor", id, err)
				}
			} else if !errors.As(err, &ie) || ie.Kind != tc.kind {
				t.Errorf("endpoint context: %+v, %v; an STS answering %v is believed, want that error", id, err, tc.kind)
			}
		})
	}
}

func TestIdentityCallIsBounded(t *testing.T) {
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select { // hang until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	defer close(release)
	// The caller's context has no deadline: only the resolver's bound ends this.
	_, err := identity.Resolver{STS: client(srv.URL), Endpoint: srv.URL, Timeout: 100 * time.Millisecond}.Resolve(context.Background())
	var ie *identity.Error
	if !errors.As(err, &ie) || ie.Kind != identity.Unreachable {
		t.Fatalf("hung STS: err = %v, want unreachable", err)
	}
	if n := hits.Load(); n > identity.MaxAttempts {
		t.Errorf("STS got %d attempts, want at most %d", n, identity.MaxAttempts)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	url, hits := fakeSTS(t, stsAnswer{status: 503, code: "ServiceUnavailable"})
	_, _ = identity.Resolver{STS: client(url), Endpoint: url}.Resolve(context.Background())
	if n := hits.Load(); n != identity.MaxAttempts {
		t.Errorf("STS got %d attempts, want %d", n, identity.MaxAttempts)
	}
}

func TestCanceledIsNotAnSTSFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := identity.Resolver{STS: client("http://127.0.0.1:1"), AllowUnverified: true}.Resolve(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled (an interrupt, not a fallback)", err)
	}
}

func TestAssertedIdentity(t *testing.T) {
	id, err := identity.Resolver{Getenv: env(map[string]string{"KOSHACTL_ACTOR": "ci@pipeline-42"})}.Asserted()
	if err != nil || id.Actor != "ci@pipeline-42" || id.Verified() {
		t.Errorf("asserted = %+v, %v", id, err)
	}
	if _, err := (identity.Resolver{Getenv: env(map[string]string{"KOSHACTL_ACTOR": "evil\x1b]0;t\a"})}).Asserted(); !errors.Is(err, identity.ErrBadActor) {
		t.Errorf("a control character in $KOSHACTL_ACTOR: err = %v, want ErrBadActor", err)
	}
	id, err = identity.Resolver{Getenv: env(nil)}.Resolve(context.Background())
	if err != nil || !strings.Contains(id.Actor, "@") || id.Source != audit.ActorUnverified {
		t.Errorf("no STS: %+v, %v; want user@host, unverified", id, err)
	}
}

func TestAWSContextNamesRegion(t *testing.T) {
	_, err := identity.Resolver{STS: client("http://127.0.0.1:1"), Region: "eu-west-1"}.Resolve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "STS at AWS STS (eu-west-1) could not be reached") {
		t.Errorf("err = %v", err)
	}
}
