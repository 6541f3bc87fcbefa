package moto

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Root is moto's root account: AWS's documented example key pair, no
// secret. moto answers STS GetCallerIdentity for it with the account's root.
var Root = aws.Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"} //nolint:gosec // G101: AWS's documented example keys, for moto

// Query sends one signed AWS query-protocol request (IAM, STS) to moto
// at endpoint with creds and returns the body; any answer but 200 fails
// the test.
func Query(tb testing.TB, endpoint, service string, creds aws.Credentials, form url.Values) string {
	tb.Helper()
	body := form.Encode()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, endpoint+"/", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, Region, time.Now()); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s %s: %d %s", service, form.Get("Action"), resp.StatusCode, b)
	}
	return string(b)
}

// Tag is the text of the first <name> element of an XML answer; its
// absence fails the test.
func Tag(tb testing.TB, body, name string) string {
	tb.Helper()
	m := regexp.MustCompile("<" + name + ">([^<]*)</" + name + ">").FindStringSubmatch(body)
	if m == nil {
		tb.Fatalf("no <%s> in %s", name, body)
	}
	return m[1]
}

// User creates the IAM user name on moto and returns an access key of it:
// STS verifies it as arn:aws:iam::123456789012:user/<name>.
func User(tb testing.TB, endpoint, name string) aws.Credentials {
	tb.Helper()
	Query(tb, endpoint, "iam", Root, url.Values{"Action": {"CreateUser"}, "UserName": {name}, "Version": {"2010-05-08"}})
	b := Query(tb, endpoint, "iam", Root, url.Values{"Action": {"CreateAccessKey"}, "UserName": {name}, "Version": {"2010-05-08"}})
	return aws.Credentials{AccessKeyID: Tag(tb, b, "AccessKeyId"), SecretAccessKey: Tag(tb, b, "SecretAccessKey")}
}

// UserARN is the caller ARN STS verifies for [User] name.
func UserARN(name string) string { return "arn:aws:iam::123456789012:user/" + name }

// UseProfiles writes profiles (name → credentials) to a shared
// credentials file in a new home directory and points the AWS settings of
// the environment at it through setenv (t.Setenv, or a clitest.Env's
// Setenv): a context's `profile: NAME` then signs as that profile. The
// other AWS variables are emptied, so nothing of the machine's leaks in.
// The SDK reads the process environment: a test using it is not parallel.
func UseProfiles(tb testing.TB, setenv func(key, value string), profiles map[string]aws.Credentials) {
	tb.Helper()
	var creds strings.Builder
	for name, c := range profiles {
		fmt.Fprintf(&creds, "[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n", name, c.AccessKeyID, c.SecretAccessKey)
		if c.SessionToken != "" {
			fmt.Fprintf(&creds, "aws_session_token = %s\n", c.SessionToken)
		}
	}
	home := tb.TempDir()
	file := filepath.Join(home, "credentials")
	if err := os.WriteFile(file, []byte(creds.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	setenv("HOME", home)
	setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	setenv("AWS_CONFIG_FILE", filepath.Join(home, "config"))
	for _, k := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_REGION"} {
		setenv(k, "")
		_ = os.Unsetenv(k)
	}
}

// Caller is who STS on moto at endpoint says creds are: the caller's
// unique id (aws:userid) and ARN.
func Caller(tb testing.TB, endpoint string, creds aws.Credentials) (userID, arn string) {
	tb.Helper()
	b := Query(tb, endpoint, "sts", creds, url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}})
	return Tag(tb, b, "UserId"), Tag(tb, b, "Arn")
}
