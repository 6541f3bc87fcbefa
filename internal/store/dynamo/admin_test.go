package dynamo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/store/dynamo"
)

// ttlAPI is an existing, ACTIVE koshactl table whose TTL is in a given
// state: what real DynamoDB answers and a fresh table on moto cannot show
// (enabling, disabling, another attribute).
type ttlAPI struct {
	dynamo.API // unused methods panic
	status     types.TimeToLiveStatus
	attr       string
	updates    []*dynamodb.UpdateTimeToLiveInput
}

func (f *ttlAPI) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName:            in.TableName,
		TableStatus:          types.TableStatusActive,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}}, nil
}

func (f *ttlAPI) DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	d := &types.TimeToLiveDescription{TimeToLiveStatus: f.status}
	if f.attr != "" {
		d.AttributeName = aws.String(f.attr)
	}
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: d}, nil
}

func (f *ttlAPI) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.updates = append(f.updates, in)
	return &dynamodb.UpdateTimeToLiveOutput{TimeToLiveSpecification: in.TimeToLiveSpecification}, nil
}

func TestInitTTLStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status   types.TimeToLiveStatus
		attr     string
		want     dynamo.TTLState
		updated  bool
		sayInfix string
	}{
		{types.TimeToLiveStatusDisabled, "", dynamo.TTLEnabled, true, `time to live enabled on attribute "ttl"`},
		{types.TimeToLiveStatusEnabled, "ttl", dynamo.TTLAlreadyEnabled, false, "already enabled"},
		{types.TimeToLiveStatusEnabling, "ttl", dynamo.TTLAlreadyEnabled, false, "already enabled"},
		{types.TimeToLiveStatusEnabled, "expires_at", dynamo.TTLOtherAttribute, false, `"expires_at", not "ttl": left as it is`},
		{types.TimeToLiveStatusDisabling, "ttl", dynamo.TTLDisabling, false, "run init again"},
	} {
		t.Run(string(tc.status)+"/"+tc.attr, func(t *testing.T) {
			f := &ttlAPI{status: tc.status, attr: tc.attr}
			r, err := dynamo.New(f, "").Init(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Created || r.Status != "ACTIVE" {
				t.Errorf("report: created %v, status %q", r.Created, r.Status)
			}
			if r.TTL != tc.want {
				t.Errorf("TTL = %q, want %q", r.TTL, tc.want)
			}
			if got := len(f.updates) > 0; got != tc.updated {
				t.Fatalf("UpdateTimeToLive called: %v, want %v", got, tc.updated)
			}
			if tc.updated {
				spec := f.updates[0].TimeToLiveSpecification
				if aws.ToString(spec.AttributeName) != "ttl" || !aws.ToBool(spec.Enabled) || aws.ToString(f.updates[0].TableName) != dynamo.DefaultTable {
					t.Errorf("UpdateTimeToLive(%s, %+v)", aws.ToString(f.updates[0].TableName), spec)
				}
			}
			if lines := strings.Join(r.Lines(), "\n"); !strings.Contains(lines, tc.sayInfix) {
				t.Errorf("report does not say %q:\n%s", tc.sayInfix, lines)
			}
		})
	}
}

// noTTLAPI is ttlAPI on an endpoint that does not implement TTL at all, as
// some local DynamoDB look-alikes do not (dynalite answered
// UnknownOperationException): Init reports it instead of failing.
type noTTLAPI struct{ ttlAPI }

func (*noTTLAPI) DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "UnknownOperationException", Message: "An unknown operation was requested."}
}

func TestInitOnAnEndpointWithoutTTL(t *testing.T) {
	t.Parallel()
	f := &noTTLAPI{}
	r, err := dynamo.New(f, "").Init(context.Background())
	if err != nil {
		t.Fatalf("Init on an endpoint without TTL: %v", err)
	}
	if r.TTL != dynamo.TTLUnsupported || len(f.updates) != 0 {
		t.Errorf("TTL = %q after %d UpdateTimeToLive calls, want %q and none", r.TTL, len(f.updates), dynamo.TTLUnsupported)
	}
	if lines := strings.Join(r.Lines(), "\n"); !strings.Contains(lines, "time to live not supported by this endpoint") {
		t.Errorf("report does not say TTL is not supported:\n%s", lines)
	}
}
