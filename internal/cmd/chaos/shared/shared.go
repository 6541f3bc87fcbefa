package shared

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/chaos/keys"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/config"
)

// Origins name the setting that selected a key source, in the order
// [ResolveKeySource] consults them.
const (
	// OriginFlag: the command's --key-file flag.
	OriginFlag = "--key-file"
	// OriginKeyFile: the context's chaos.key-file.
	OriginKeyFile = "chaos.key-file"
	// OriginKeyEnv: the context's chaos.key-env.
	OriginKeyEnv = "chaos.key-env"
	// OriginSecretID: the context's chaos.secret-id.
	OriginSecretID = "chaos.secret-id"
	// OriginLocal: the local context's key, generated on first use.
	OriginLocal = "local context"
)

// KeySource is the chaos key source a command uses, and why it was chosen.
// It never holds or prints key material itself; keys are read from the
// source when a command needs them.
type KeySource struct {
	keys.Source
	// Origin is the setting that selected the source (one of the Origin
	// constants).
	Origin string
	// Subject names the key in audit records: chaos-key#<secret id> for
	// Secrets Manager, chaos-key#local for the local key,
	// chaos-key#file:<path> and chaos-key#env:<NAME> otherwise.
	Subject string

	localPath    string
	localExisted bool
}

// ResolveKeySource picks the chaos key source of env's context. The first
// that applies wins:
//
//  1. keyFile, the command's --key-file flag (for CI and tests);
//  2. the context's chaos.key-file;
//  3. the context's chaos.key-env (an environment variable name);
//  4. the context's chaos.secret-id (AWS Secrets Manager, through the
//     context's AWS configuration);
//  5. on a local context, the key file in the state directory, generated on
//     first use.
//
// Otherwise it returns a usage error (exit 2) that says how to configure
// one. Nothing is read yet: a bad file or an unset variable is reported
// when the key is first used.
//
// A Secrets Manager source keeps signing with AWSPREVIOUS for the context's
// chaos.propagation-delay (default [keys.DefaultPropagationDelay]) after a
// rotation, by clk.
func ResolveKeySource(ctx context.Context, env *cmdutil.Env, clk clock.Clock, keyFile string) (*KeySource, error) {
	cc := env.Context.Chaos
	switch {
	case keyFile != "":
		return &KeySource{Source: keys.NewFile(keyFile), Origin: OriginFlag, Subject: "chaos-key#file:" + keyFile}, nil
	case cc.KeyFile != "":
		return &KeySource{Source: keys.NewFile(cc.KeyFile), Origin: OriginKeyFile, Subject: "chaos-key#file:" + cc.KeyFile}, nil
	case cc.KeyEnv != "":
		return &KeySource{Source: keys.NewEnvLookup(cc.KeyEnv, env.Environ.Lookup), Origin: OriginKeyEnv, Subject: "chaos-key#env:" + cc.KeyEnv}, nil
	case cc.SecretID != "":
		api, err := secretsClient(ctx, env, cc.SecretID)
		if err != nil {
			return nil, err
		}
		sm := keys.NewSecretsManager(api, cc.SecretID).WithPropagation(clk, PropagationDelay(env.Context.Chaos))
		return &KeySource{Source: sm, Origin: OriginSecretID, Subject: "chaos-key#" + cc.SecretID}, nil
	case env.Context.IsLocal():
		if env.StateDir == "" {
			return nil, errors.New("resolve chaos key: the local context has no state directory (set KOSHACTL_STATE_DIR)")
		}
		ks := &KeySource{Source: keys.NewLocal(env.StateDir), Origin: OriginLocal, Subject: "chaos-key#local",
			localPath: filepath.Join(env.StateDir, keys.LocalKeyFile)}
		_, err := os.Lstat(ks.localPath)
		ks.localExisted = !errors.Is(err, fs.ErrNotExist)
		return ks, nil
	}
	return nil, cmdutil.Usagef("context %q has no chaos key source: configure one with koshactl config set-context %s --chaos-secret-id ID (or --chaos-key-file PATH, or --chaos-key-env VAR), or pass --key-file PATH",
		env.Name, env.Name)
}

// PropagationDelay is the context's chaos.propagation-delay, or
// [keys.DefaultPropagationDelay] when it sets none.
func PropagationDelay(cc config.ChaosConfig) time.Duration {
	if cc.PropagationDelay == nil {
		return keys.DefaultPropagationDelay
	}
	return time.Duration(*cc.PropagationDelay)
}

// secretsClient builds the Secrets Manager client from the context's AWS
// configuration (region, profile, credentials and endpoints: the context's
// secretsmanager endpoint, else its endpoint-url, else the SDK's standard
// configuration such as AWS_ENDPOINT_URL_SECRETS_MANAGER).
func secretsClient(ctx context.Context, env *cmdutil.Env, secretID string) (keys.SecretsManagerAPI, error) {
	if env.AWSConfig == nil {
		return nil, fmt.Errorf("resolve chaos key: context %q reads its key from Secrets Manager secret %q but has no AWS configuration", env.Name, secretID)
	}
	cfg, err := env.AWSConfig(ctx)
	if err != nil {
		err = fmt.Errorf("resolve chaos key: context %q reads its key from Secrets Manager secret %q: %w", env.Name, secretID, err)
		if env.Context.IsLocal() {
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%w; or pass --key-file PATH", err))
		}
		return nil, err
	}
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		// The context's secretsmanager endpoint wins even over AWS_ENDPOINT_URL.
		if ep, ok := awsconf.ServiceEndpoint(cfg, "Secrets Manager"); ok {
			o.BaseEndpoint = &ep
		}
	}), nil
}

// GeneratedLocal reports whether this is the local context's key and its
// file was created after the source was resolved (first use), so a command
// can say that it generated a key.
func (s *KeySource) GeneratedLocal() bool {
	if s.localPath == "" || s.localExisted {
		return false
	}
	_, err := os.Lstat(s.localPath)
	return err == nil
}

// Existing returns the keys the source holds now, like Keys, except that
// for the local context's key it generates nothing: with no key file yet it
// returns no keys. Dry runs use it so they write nothing.
func (s *KeySource) Existing(ctx context.Context) ([]keys.Staged, error) {
	if s.localPath != "" {
		if _, err := os.Lstat(s.localPath); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return s.Keys(ctx)
}

// Targets returns the chaos targets env's context allows, or nil when it
// configures none (the library then allows [chaos.DefaultTargets]). A
// malformed configured target is a usage error naming the fix.
func Targets(env *cmdutil.Env) ([]chaos.Target, error) {
	cfg := env.Context.Chaos.Targets
	if len(cfg) == 0 {
		return nil, nil
	}
	out := make([]chaos.Target, 0, len(cfg))
	for _, s := range cfg {
		t, err := chaos.ParseTarget(s)
		if err != nil {
			return nil, cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("context %q: chaos targets: %w; fix them with koshactl config set-context %s --chaos-targets a,b",
				env.Name, err, env.Name))
		}
		out = append(out, t)
	}
	return out, nil
}

// TargetNames returns the names of ts, or of the default targets when ts is
// nil.
func TargetNames(ts []chaos.Target) []string {
	if ts == nil {
		ts = chaos.DefaultTargets()
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = string(t)
	}
	return names
}

// JoinTargets renders target names for messages: "core-api, openai".
func JoinTargets(ts []chaos.Target) string { return strings.Join(TargetNames(ts), ", ") }

// AddKeyFileFlag registers --key-file on cmd.
func AddKeyFileFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVar(target, "key-file", "", "chaos key file to use instead of the context's key source (mode 0600, base64 of 32+ random bytes)")
	_ = cmd.MarkFlagFilename("key-file")
}
