// Command sdkpeer is the peer of the version start-up benchmark: a Go program
// that links the AWS SDK clients koshactl links (DynamoDB, STS, Secrets
// Manager, CloudWatch, SNS for notifications, and the shared config with its
// SSO credential providers) and only prints its version. What koshactl version costs beyond
// it is koshactl's own start-up.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// linked keeps each client's constructor in the binary, as koshactl's do.
var linked = []any{
	config.LoadDefaultConfig, credentials.NewStaticCredentialsProvider,
	dynamodb.NewFromConfig, sts.NewFromConfig, secretsmanager.NewFromConfig, cloudwatch.NewFromConfig,
	sns.NewFromConfig,
}

func main() {
	version := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok {
		version = info.Main.Version
	}
	fmt.Fprintf(os.Stdout, "sdkpeer %s, %d SDK entry points linked\n", version, len(linked))
}
