package keys

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/clock"
)

// Origins name the setting that selected a key source, in the order
// [Choose] consults them.
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

// ErrNoSource reports a context that names no usable chaos key source (a
// usage problem: the message says how to configure one).
var ErrNoSource = errors.New("no chaos key source")

// noSourceError is a source the context names but cannot use, where
// --key-file is the way past it: it matches [ErrNoSource] and reads as err.
type noSourceError struct{ err error }

func (e noSourceError) Error() string        { return e.err.Error() }
func (e noSourceError) Unwrap() error        { return e.err }
func (e noSourceError) Is(target error) bool { return target == ErrNoSource }

// Settings are what [Choose] decides from: a context's chaos settings and
// the command's --key-file.
type Settings struct {
	// Context names the context, for messages.
	Context string
	// FlagKeyFile is the command's --key-file ("" when not given).
	FlagKeyFile string
	// KeyFile, KeyEnv and SecretID are the context's chaos.key-file,
	// chaos.key-env and chaos.secret-id.
	KeyFile, KeyEnv, SecretID string
	// PropagationDelay is how long a Secrets Manager source keeps signing
	// with AWSPREVIOUS after a rotation (the context's
	// chaos.propagation-delay, else [DefaultPropagationDelay]).
	PropagationDelay time.Duration
	// Local is true on the local context, whose key lives in StateDir.
	Local    bool
	StateDir string
	// AWSConfig returns the context's AWS configuration (for Secrets
	// Manager); nil when it has none.
	AWSConfig func(ctx context.Context) (aws.Config, error)
	Clock     clock.Clock
	// Lookup reads KeyEnv's variable (the command's environment); nil is
	// os.LookupEnv.
	Lookup func(name string) (string, bool)
}

// Chosen is the chaos key source a command uses, and why it was chosen.
// It never holds or prints key material itself; keys are read from the
// source when a command needs them.
type Chosen struct {
	Source
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

// Choose is the one rule for which chaos key source a context uses. The
// first that applies wins:
//
//  1. the command's --key-file flag (for CI and tests);
//  2. the context's chaos.key-file;
//  3. the context's chaos.key-env (an environment variable name);
//  4. the context's chaos.secret-id (AWS Secrets Manager, through the
//     context's AWS configuration);
//  5. on a local context, the key file in the state directory, generated on
//     first use.
//
// Otherwise it returns an error wrapping [ErrNoSource] that says how to
// configure one. Nothing is read yet: a bad file or an unset variable is
// reported when the key is first used.
func Choose(ctx context.Context, s Settings) (*Chosen, error) {
	switch {
	case s.FlagKeyFile != "":
		return &Chosen{Source: NewFile(s.FlagKeyFile), Origin: OriginFlag, Subject: "chaos-key#file:" + s.FlagKeyFile}, nil
	case s.KeyFile != "":
		return &Chosen{Source: NewFile(s.KeyFile), Origin: OriginKeyFile, Subject: "chaos-key#file:" + s.KeyFile}, nil
	case s.KeyEnv != "":
		return &Chosen{Source: NewEnvLookup(s.KeyEnv, s.Lookup), Origin: OriginKeyEnv, Subject: "chaos-key#env:" + s.KeyEnv}, nil
	case s.SecretID != "":
		api, err := secretsClient(ctx, s)
		if err != nil {
			return nil, err
		}
		sm := NewSecretsManager(api, s.SecretID).WithPropagation(s.Clock, s.PropagationDelay)
		return &Chosen{Source: sm, Origin: OriginSecretID, Subject: "chaos-key#" + s.SecretID}, nil
	case s.Local:
		if s.StateDir == "" {
			return nil, errors.New("resolve chaos key: the local context has no state directory (set KOSHACTL_STATE_DIR)")
		}
		c := &Chosen{Source: NewLocal(s.StateDir), Origin: OriginLocal, Subject: "chaos-key#local",
			localPath: filepath.Join(s.StateDir, LocalKeyFile)}
		_, err := os.Lstat(c.localPath)
		c.localExisted = !errors.Is(err, fs.ErrNotExist)
		return c, nil
	}
	return nil, fmt.Errorf("context %q has %w: configure one with koshactl config set-context %s --chaos-secret-id ID (or --chaos-key-file PATH, or --chaos-key-env VAR), or pass --key-file PATH",
		s.Context, ErrNoSource, s.Context)
}

// secretsClient builds the Secrets Manager client from the context's AWS
// configuration (region, profile, credentials and endpoints: the context's
// secretsmanager endpoint, else its endpoint-url, else the SDK's standard
// configuration such as AWS_ENDPOINT_URL_SECRETS_MANAGER).
func secretsClient(ctx context.Context, s Settings) (SecretsManagerAPI, error) {
	if s.AWSConfig == nil {
		return nil, fmt.Errorf("resolve chaos key: context %q reads its key from Secrets Manager secret %q but has no AWS configuration", s.Context, s.SecretID)
	}
	cfg, err := s.AWSConfig(ctx)
	if err != nil {
		err = fmt.Errorf("resolve chaos key: context %q reads its key from Secrets Manager secret %q: %w", s.Context, s.SecretID, err)
		if s.Local {
			return nil, noSourceError{fmt.Errorf("%w; or pass --key-file PATH", err)}
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
// file was created after the source was chosen (first use), so a command
// can say that it generated a key.
func (c *Chosen) GeneratedLocal() bool {
	if c.localPath == "" || c.localExisted {
		return false
	}
	_, err := os.Lstat(c.localPath)
	return err == nil
}

// Existing returns the keys the source holds now, like Keys, except that
// for the local context's key it generates nothing: with no key file yet it
// returns no keys. Dry runs use it so they write nothing.
func (c *Chosen) Existing(ctx context.Context) ([]Staged, error) {
	if c.localPath != "" {
		if _, err := os.Lstat(c.localPath); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return c.Keys(ctx)
}
