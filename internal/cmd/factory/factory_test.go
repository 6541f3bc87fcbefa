package factory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/kosha-platform/koshactl/internal/store"
)

type fakeSTS struct {
	arn string
	err error
}

func (f fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &sts.GetCallerIdentityOutput{Arn: aws.String(f.arn)}, nil
}

func TestActorIsTheCallerIdentityOnAWSContexts(t *testing.T) {
	arn := "arn:aws:sts::123456789012:assumed-role/oncall/alice"
	got, err := identityFrom(context.Background(), fakeSTS{arn: arn})
	if err != nil || got != arn {
		t.Errorf("identity = %q, %v", got, err)
	}
	_, err = identityFrom(context.Background(), fakeSTS{err: errors.New("ExpiredToken: the security token included in the request is expired\nretry")})
	if !errors.Is(err, store.ErrCredentials) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "aws sso login") {
		t.Errorf("expired credentials: %v", err)
	}
}

func TestLocalActor(t *testing.T) {
	t.Setenv("KOSHACTL_ACTOR", "ci@pipeline-42")
	if a, _ := localActor(context.Background()); a != "ci@pipeline-42" {
		t.Errorf("KOSHACTL_ACTOR not honored: %q", a)
	}
	t.Setenv("KOSHACTL_ACTOR", "")
	if a, _ := localActor(context.Background()); !strings.Contains(a, "@") {
		t.Errorf("local actor %q is not user@host", a)
	}
}
