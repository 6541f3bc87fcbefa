// Package policy implements `koshactl iam policy`: the least-privilege IAM
// policy of a role for the context's table, chaos secret and CloudWatch
// namespace, rendered by internal/iam from its table of operations.
package policy

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/gauge"
	"github.com/kosha-platform/koshactl/internal/iam"
	"github.com/kosha-platform/koshactl/internal/identity"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags.
type Options struct {
	Role    iam.Role
	Account string
	// KMSKey is the ARN of the chaos secret's customer-managed KMS key.
	KMSKey string
	Output string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	var role string
	names := make([]string, len(iam.Roles))
	for i, r := range iam.Roles {
		names[i] = string(r)
	}
	cmd := &cobra.Command{
		Use:   "policy --role " + strings.Join(names, "|"),
		Short: "Print the least-privilege IAM policy of a role for the context's table, chaos secret and metrics",
		Long: heredoc.Doc(`
			Print an IAM policy document granting one role exactly the AWS actions its
			commands call, on the context's resources: the table (and its indexes), the
			chaos key's secret, the breaker_state gauges and the SNS topics the context
			announces its changes on (sns:Publish, for the roles that change things).
			DynamoDB item actions are limited with dynamodb:LeadingKeys to the item
			prefixes the role touches (breaker#, rl#, audit#, the data plane's audit#dp#);
			the writes of a change (a lever and its audit record, one TransactWriteItems)
			are granted only inside a transaction (dynamodb:EnclosingOperation). See
			docs/iam.md for what each role is for.

			The account is --account, else the caller's (sts GetCallerIdentity).
			When the chaos secret is encrypted with a customer-managed KMS key, give its
			ARN with --kms-key-arn: roles that read (or rotate) the key then get
			kms:Decrypt (and kms:GenerateDataKey) on it, only through Secrets Manager
			(kms:ViaService). The secret's key is what
			aws secretsmanager describe-secret --secret-id ID --query KmsKeyId shows.
		`),
		Example: heredoc.Doc(`
			koshactl iam policy --role reader --context prod
			koshactl iam policy --role operator --account 123456789012 > operator.json
			aws iam create-policy --policy-name koshactl-reader \
			    --policy-document "$(koshactl iam policy --role reader)"
		`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			r, err := iam.ParseRole(role)
			if err != nil {
				return cmdutil.Usagef("--role: %v", err)
			}
			opts.Role = r
			if opts.Account != "" && (len(opts.Account) != 12 || strings.Trim(opts.Account, "0123456789") != "") {
				return cmdutil.Usagef("--account %q is not a 12-digit AWS account id", opts.Account)
			}
			if opts.KMSKey != "" {
				if err := iam.CheckKMSKeyARN(opts.KMSKey); err != nil {
					return cmdutil.Usagef("--kms-key-arn: %v", err)
				}
			}
			return Run(c.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "the role: "+strings.Join(names, "|")+" (required)")
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions(names, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&opts.Account, "account", "", "AWS account id of the resources (default: the caller's, from STS)")
	cmd.Flags().StringVar(&opts.KMSKey, "kms-key-arn", "", "ARN of the customer-managed KMS key encrypting the chaos secret (default: the AWS managed key, no KMS statement)")
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

// Run prints the policy. It needs no credentials when --account is
// given and the context names its region.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	name, c, err := f.SelectedContext()
	if err != nil {
		return err
	}
	if c.IsLocal() || c.Store.DynamoDB == nil {
		return cmdutil.Usagef("context %q uses the embedded store: IAM policies are for a context on a DynamoDB table "+
			"(koshactl config set-context NAME --table TABLE --region REGION), then --context NAME", name)
	}
	d := c.Store.DynamoDB
	t := iam.Target{Region: d.Region, Account: opts.Account, Table: d.Table, Secret: c.Chaos.SecretID,
		Namespace: gauge.DefaultNamespace, KMSKey: opts.KMSKey}
	if cw := c.Metrics.CloudWatch; cw != nil && cw.Namespace != "" {
		t.Namespace = cw.Namespace
	}
	for _, s := range c.Notify {
		if s.SNS != nil {
			t.Topics = append(t.Topics, s.SNS.TopicARN)
		}
	}
	if t.Region == "" {
		t.Region = os.Getenv("AWS_REGION")
	}
	if t.Account == "" || t.Region == "" {
		env, err := f.Env(ctx)
		if err != nil {
			return err
		}
		cfg, err := env.AWSConfig(ctx)
		if err != nil {
			return err
		}
		if t.Region == "" {
			t.Region = cfg.Region
		}
		if t.Account == "" {
			if t.Account, err = account(ctx, sts.NewFromConfig(cfg)); err != nil {
				return err
			}
		}
	}
	doc, err := iam.Policy(opts.Role, t)
	if err != nil {
		return err
	}
	if t.Secret == "" && needsService(opts.Role, "secretsmanager") {
		fmt.Fprintf(f.IOStreams.ErrOut, "context %q names no chaos secret (chaos.secret-id): the policy has no Secrets Manager statement\n", name)
	}
	if len(t.Topics) == 0 && needsService(opts.Role, "sns") {
		fmt.Fprintf(f.IOStreams.ErrOut, "context %q names no SNS notification sink (notify: - sns: ...): the policy has no SNS statement\n", name)
	}
	format := opts.Output
	if format == cmdutil.FormatTable {
		format = cmdutil.FormatJSON // the document is the human form too
	}
	return cmdutil.PrintStructured(f.IOStreams.Out, format, doc)
}

func needsService(r iam.Role, service string) bool {
	for _, n := range r.Needs() {
		if n.Service() == service {
			return true
		}
	}
	return false
}

// account asks STS which account the caller is in.
func account(ctx context.Context, api identity.STSAPI) (string, error) {
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("%w: the account could not be established (sts GetCallerIdentity: %v); give --account ACCOUNT_ID or refresh credentials",
			store.ErrCredentials, textsafe.OneLine(err.Error()))
	}
	return aws.ToString(out.Account), nil
}
