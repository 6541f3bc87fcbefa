package smfake_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/chaos/keys/smfake"
	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
)

const name = "s"

func client(s *smfake.Server) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region: "eu-west-1", BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "not-a-secret", ""),
	})
}

func token(i int) string { return fmt.Sprintf("%032d", i) }

func put(t *testing.T, c *secretsmanager.Client, tok, value string, stages ...string) *secretsmanager.PutSecretValueOutput {
	t.Helper()
	out, err := c.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(name),
		ClientRequestToken: aws.String(tok), SecretString: aws.String(value), VersionStages: stages})
	if err != nil {
		t.Fatalf("put %s: %v", tok, err)
	}
	return out
}

func move(c *secretsmanager.Client, label, to, from string) error {
	in := &secretsmanager.UpdateSecretVersionStageInput{SecretId: aws.String(name), VersionStage: aws.String(label)}
	if to != "" {
		in.MoveToVersionId = aws.String(to)
	}
	if from != "" {
		in.RemoveFromVersionId = aws.String(from)
	}
	_, err := c.UpdateSecretVersionStage(context.Background(), in)
	return err
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestVersionStageRules(t *testing.T) {
	s := smfake.New(t, nil)
	s.Create(name)
	c := client(s)

	// The first version is current even when put under AWSPENDING only.
	if out := put(t, c, token(1), "a", "AWSPENDING"); len(out.VersionStages) != 2 {
		t.Errorf("first version stages %v, want AWSPENDING and AWSCURRENT", out.VersionStages)
	}
	if err := move(c, "AWSPENDING", "", token(1)); err != nil {
		t.Fatal(err)
	}
	// Later versions get only the labels asked for.
	if out := put(t, c, token(2), "b", "AWSPENDING"); len(out.VersionStages) != 1 {
		t.Errorf("second version stages %v, want AWSPENDING only", out.VersionStages)
	}
	if st := s.Stages(name); st["AWSCURRENT"] != token(1) {
		t.Errorf("a pending put moved AWSCURRENT: %v", st)
	}
	// A label put on another version moves there.
	put(t, c, token(3), "c", "AWSPENDING")
	if st := s.Stages(name); st["AWSPENDING"] != token(3) {
		t.Errorf("AWSPENDING did not move: %v", st)
	}

	// Moving AWSCURRENT needs RemoveFromVersionId naming its holder.
	if err := move(c, "AWSCURRENT", token(2), ""); code(err) != "InvalidParameterException" {
		t.Errorf("move without RemoveFromVersionId: %v", err)
	}
	if err := move(c, "AWSCURRENT", token(2), token(3)); code(err) != "InvalidParameterException" {
		t.Errorf("move with the wrong RemoveFromVersionId: %v", err)
	}
	if err := move(c, "AWSCURRENT", token(2), token(1)); err != nil {
		t.Fatal(err)
	}
	// AWSPREVIOUS follows automatically.
	if st := s.Stages(name); st["AWSCURRENT"] != token(2) || st["AWSPREVIOUS"] != token(1) {
		t.Errorf("after the move: %v", st)
	}
	if err := move(c, "AWSCURRENT", token(3), token(1)); code(err) != "InvalidParameterException" {
		t.Errorf("a move conditioned on a stale current: %v", err)
	}
	// AWSCURRENT cannot be removed, only moved; a label is removed only from its holder.
	if err := move(c, "AWSCURRENT", "", token(2)); code(err) != "InvalidParameterException" {
		t.Errorf("removing AWSCURRENT: %v", err)
	}
	if err := move(c, "AWSPENDING", "", token(2)); code(err) != "InvalidParameterException" {
		t.Errorf("removing a label from a version without it: %v", err)
	}

	// ClientRequestToken: same value is idempotent, another value fails.
	before := len(s.Versions(name))
	if out := put(t, c, token(3), "c", "AWSPENDING"); aws.ToString(out.VersionId) != token(3) || len(s.Versions(name)) != before {
		t.Errorf("repeated put created a version")
	}
	_, err := c.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(name),
		ClientRequestToken: aws.String(token(3)), SecretString: aws.String("other")})
	if code(err) != "ResourceExistsException" {
		t.Errorf("same token, other value: %v", err)
	}
	_, err = c.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(name),
		ClientRequestToken: aws.String("short"), SecretString: aws.String("x")})
	if code(err) != "InvalidParameterException" {
		t.Errorf("short token: %v", err)
	}

	// At most 20 labels per version.
	labels := make([]string, smfake.MaxLabelsPerVersion+1)
	for i := range labels {
		labels[i] = fmt.Sprintf("L%d", i)
	}
	_, err = c.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{SecretId: aws.String(name),
		ClientRequestToken: aws.String(token(4)), SecretString: aws.String("d"), VersionStages: labels})
	if code(err) != "LimitExceededException" {
		t.Errorf("21 labels: %v", err)
	}
	put(t, c, token(5), "e", labels[:smfake.MaxLabelsPerVersion]...)
	if err := move(c, "AWSPENDING", token(5), token(3)); code(err) != "LimitExceededException" {
		t.Errorf("a 21st label by move: %v", err)
	}
}

func TestUnlabeledVersionsArePrunedPast100(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := smfake.New(t, clk)
	s.Create(name)
	c := client(s)
	put(t, c, token(0), "first")                 // AWSCURRENT
	put(t, c, token(1), "pending", "AWSPENDING") // labeled: never pruned
	for i := 2; i < 60; i++ {
		put(t, c, token(i), "old", "X")
		if err := move(c, "X", "", token(i)); err != nil { // now unlabeled
			t.Fatal(err)
		}
	}
	clk.Advance(smfake.PruneMinAge)
	for i := 60; i < 120; i++ { // young and unlabeled
		put(t, c, token(i), "young", "Y")
		if err := move(c, "Y", "", token(i)); err != nil {
			t.Fatal(err)
		}
	}
	vs := s.Versions(name)
	if len(vs) != smfake.PruneAbove {
		t.Fatalf("%d versions kept, want %d", len(vs), smfake.PruneAbove)
	}
	kept := map[string]bool{}
	for _, v := range vs {
		kept[v.ID] = true
	}
	if !kept[token(0)] || !kept[token(1)] || !kept[token(119)] || kept[token(2)] || !kept[token(59)] {
		t.Errorf("pruned the wrong versions: labeled kept %v %v, oldest unlabeled kept %v, young kept %v",
			kept[token(0)], kept[token(1)], kept[token(2)], kept[token(119)])
	}
}
