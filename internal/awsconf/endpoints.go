package awsconf

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Services maps the service names a context's endpoints are keyed by to the
// SDK's service IDs (the names AWS_ENDPOINT_URL_<SERVICE> and the shared
// config's services sections derive from).
var Services = map[string]string{
	"dynamodb":       "DynamoDB",
	"sts":            "STS",
	"secretsmanager": "Secrets Manager",
	"cloudwatch":     "CloudWatch",
	"sns":            "SNS",
}

// serviceEndpoints is a configuration source the SDK's clients consult for
// their endpoint (it implements the SDK's ServiceBaseEndpointProvider): the
// context's per-service endpoints, keyed by SDK service ID. [Load] puts it
// first in aws.Config.ConfigSources, so it wins over AWS_ENDPOINT_URL_<SERVICE>
// and the shared config's services sections, as an explicit setting should.
type serviceEndpoints map[string]string

// GetServiceBaseEndpoint implements the SDK's ServiceBaseEndpointProvider.
func (s serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v, ok := s[sdkID]
	return v, ok, nil
}

func newServiceEndpoints(byName map[string]string) serviceEndpoints {
	out := serviceEndpoints{}
	for name, u := range byName {
		if u != "" {
			out[Services[name]] = u
		}
	}
	return out
}

// ServiceEndpoint returns the endpoint the context names for the service with
// SDK ID sdkID ("STS", "DynamoDB", ...), if any. A client built from cfg
// already resolves it through the SDK's configuration sources, except when
// AWS_ENDPOINT_URL is set without AWS_ENDPOINT_URL_<SERVICE>: then the SDK
// uses the global one. Set the client's BaseEndpoint to this value to make
// the context's choice win in every case.
func ServiceEndpoint(cfg aws.Config, sdkID string) (string, bool) {
	for _, src := range cfg.ConfigSources {
		if se, ok := src.(serviceEndpoints); ok {
			v, found := se[sdkID]
			return v, found
		}
	}
	return "", false
}

func validateEndpoint(what, endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("load aws config: %s %q is not an http(s) URL with a host", what, endpoint)
	}
	return nil
}

func validateEndpoints(byName map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if _, ok := Services[name]; !ok {
			return fmt.Errorf("load aws config: unknown service %q in endpoints: use one of %s", name, strings.Join(slices.Sorted(maps.Keys(Services)), ", "))
		}
		if byName[name] == "" {
			continue
		}
		if err := validateEndpoint(name+" endpoint URL", byName[name]); err != nil {
			return err
		}
	}
	return nil
}
