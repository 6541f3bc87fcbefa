package moto

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kosha-platform/koshactl/internal/awsconf"
)

// Region is the region tests sign moto requests for. moto keeps separate
// state per region, as AWS does: clients of one server must agree on it.
const Region = "us-east-1"

// Options returns the AWS settings of a context pointed at a moto
// endpoint: its URL, dummy static credentials and a single attempt per request
// so failures show at once.
func Options(endpoint string) awsconf.Options {
	return awsconf.Options{
		Region:            Region,
		EndpointURL:       endpoint,
		StaticCredentials: true,
		MaxAttempts:       1,
	}
}

// Config loads an aws.Config for endpoint with [Options], failing the test
// if it cannot.
func Config(tb testing.TB, endpoint string) aws.Config {
	tb.Helper()
	cfg, err := awsconf.Load(context.Background(), Options(endpoint))
	if err != nil {
		tb.Fatalf("aws config for moto at %s: %v", endpoint, err)
	}
	return cfg
}
