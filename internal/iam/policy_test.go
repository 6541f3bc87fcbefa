package iam_test

import (
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/iam"
)

func TestTargetARNs(t *testing.T) {
	cases := []struct {
		t             iam.Target
		table, secret string
	}{
		{iam.Target{Region: "eu-west-1", Account: "123456789012", Table: "kosha-control", Secret: "kosha/chaos/prod"}, //nolint:gosec // G101: a secret's name, not its value
			"arn:aws:dynamodb:eu-west-1:123456789012:table/kosha-control", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:kosha/chaos/prod-??????"},
		{iam.Target{Region: "cn-north-1", Account: "123456789012", Table: "t", Secret: "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:k-AbCdEf"}, //nolint:gosec // G101: a secret's ARN, not its value
			"arn:aws-cn:dynamodb:cn-north-1:123456789012:table/t", "arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:k-AbCdEf"},
		{iam.Target{Region: "us-gov-west-1", Account: "123456789012", Table: "t", Secret: "s"},
			"arn:aws-us-gov:dynamodb:us-gov-west-1:123456789012:table/t", "arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:s-??????"},
	}
	for _, c := range cases {
		if got := c.t.TableARN(); got != c.table {
			t.Errorf("TableARN = %s, want %s", got, c.table)
		}
		if got := c.t.SecretARN(); got != c.secret {
			t.Errorf("SecretARN = %s, want %s", got, c.secret)
		}
	}
}

func TestPolicyRefusesAnIncompleteTarget(t *testing.T) {
	for _, tg := range []iam.Target{
		{Region: "eu-west-1", Table: "t"},
		{Account: "123456789012", Table: "t"},
		{Region: "eu-west-1", Account: "12345678901x", Table: "t"},
	} {
		if _, err := iam.Policy(iam.Reader, tg); err == nil || !strings.Contains(err.Error(), "policy target") {
			t.Errorf("%+v: %v", tg, err)
		}
	}
	if _, err := iam.Policy("root", iam.Target{Region: "eu-west-1", Account: "123456789012", Table: "t"}); err == nil {
		t.Error("an unknown role rendered a policy")
	}
}

func TestPolicyWithoutSecretHasNoSecretsManagerStatement(t *testing.T) {
	doc, err := iam.Policy(iam.Operator, iam.Target{Region: "eu-west-1", Account: "123456789012", Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.Statement {
		if strings.HasPrefix(s.Action[0], "secretsmanager:") {
			t.Errorf("statement %s without a secret", s.Sid)
		}
	}
}
