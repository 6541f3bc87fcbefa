package keys

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/chaos"
)

// SecretsManagerAPI is the part of the Secrets Manager client this package
// uses.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
}

var (
	_ SecretsManagerAPI = (*secretsmanager.Client)(nil)
	_ Source            = (*SecretsManager)(nil)
	_ Rotator           = (*SecretsManager)(nil)
)

// SecretsManager keeps the chaos key in an AWS Secrets Manager secret whose
// SecretString is standard base64 of the key. AWSCURRENT signs; AWSCURRENT
// and AWSPREVIOUS verify, found by kid. Rotate puts a fresh key, which
// Secrets Manager makes AWSCURRENT while moving the old one to AWSPREVIOUS.
//
// It reads the secret on every call (no cache), which suits a CLI; a
// long-running verifier should take a [Snapshot].
type SecretsManager struct {
	api      SecretsManagerAPI
	secretID string
}

// NewSecretsManager returns the source for secret secretID (a name or ARN)
// read through api.
func NewSecretsManager(api SecretsManagerAPI, secretID string) *SecretsManager {
	return &SecretsManager{api: api, secretID: secretID}
}

// Describe returns `Secrets Manager secret "ID"`.
func (s *SecretsManager) Describe() string {
	return fmt.Sprintf("Secrets Manager secret %q", s.secretID)
}

// Current returns the AWSCURRENT key.
func (s *SecretsManager) Current(ctx context.Context) (chaos.Key, error) {
	st, err := s.stage(ctx, StageCurrent)
	return st.Key, err
}

// ByKID returns the AWSCURRENT or AWSPREVIOUS key with id kid. It reads
// AWSPREVIOUS only when AWSCURRENT does not match.
func (s *SecretsManager) ByKID(ctx context.Context, kid string) (chaos.Key, error) {
	cur, err := s.stage(ctx, StageCurrent)
	if err != nil {
		return chaos.Key{}, err
	}
	if cur.Key.KID() == kid {
		return cur.Key, nil
	}
	staged := []Staged{cur}
	prev, err := s.stage(ctx, StagePrevious)
	switch {
	case errors.Is(err, ErrNoKey):
	case err != nil:
		return chaos.Key{}, err
	default:
		staged = append(staged, prev)
	}
	return byKID(staged, kid, s.Describe())
}

// Keys returns AWSCURRENT and, if the secret has one, AWSPREVIOUS.
func (s *SecretsManager) Keys(ctx context.Context) ([]Staged, error) {
	cur, err := s.stage(ctx, StageCurrent)
	if err != nil {
		return nil, err
	}
	prev, err := s.stage(ctx, StagePrevious)
	switch {
	case errors.Is(err, ErrNoKey):
		return []Staged{cur}, nil
	case err != nil:
		return nil, err
	}
	return []Staged{cur, prev}, nil
}

func (s *SecretsManager) stage(ctx context.Context, stage string) (Staged, error) {
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
		SecretId:     aws.String(s.secretID),
		VersionStage: aws.String(stage),
	})
	if err != nil {
		return Staged{}, s.classify(opRead, stage, err)
	}
	version := aws.ToString(out.VersionId)
	if out.SecretString == nil {
		what := "no SecretString"
		if out.SecretBinary != nil {
			what = "a SecretBinary instead of a SecretString"
		}
		return Staged{}, fmt.Errorf("read chaos key secret %q (%s, version %s): %w: it holds %s; chaos keys are a SecretString of standard base64 (run koshactl chaos key rotate to store one)",
			s.secretID, stage, version, chaos.ErrInvalidKey, what)
	}
	k, err := chaos.DecodeKey(*out.SecretString)
	if err != nil {
		return Staged{}, fmt.Errorf("read chaos key secret %q (%s, version %s): %w", s.secretID, stage, version, err)
	}
	return Staged{Stage: stage, Key: k, VersionID: version}, nil
}

// Rotate puts a fresh random key as a new version of the secret. Secrets
// Manager attaches AWSCURRENT to it and moves AWSPREVIOUS to the version
// that was current, so headers signed before the rotation keep verifying.
// The request carries a random ClientRequestToken, so the SDK's retries
// cannot create two versions. A current value that is not a valid key is
// replaced (rotation is how to repair it); the secret itself must exist.
func (s *SecretsManager) Rotate(ctx context.Context) (Rotation, error) {
	old, err := s.Current(ctx)
	if err != nil && !errors.Is(err, ErrNoKey) && !errors.Is(err, chaos.ErrInvalidKey) {
		return Rotation{}, err
	}
	k, err := chaos.GenerateKey(nil)
	if err != nil {
		return Rotation{}, err
	}
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return Rotation{}, fmt.Errorf("rotate chaos key: %w", err)
	}
	out, err := s.api.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId:           aws.String(s.secretID),
		SecretString:       aws.String(k.ExportBase64()),
		ClientRequestToken: aws.String(hex.EncodeToString(tok[:])),
	})
	if err != nil {
		return Rotation{}, s.classify(opRotate, StageCurrent, err)
	}
	return Rotation{Previous: old, Current: k, VersionID: aws.ToString(out.VersionId)}, nil
}

type secretOp int

const (
	opRead secretOp = iota
	opRotate
)

// SecretError is a Secrets Manager failure, classified. It matches its
// Kind (ErrNoKey, ErrAccessDenied, ErrThrottled, ErrCredentials, or nil
// when unclassified) and the SDK error with errors.Is/As.
type SecretError struct {
	// SecretID is the secret the call was for.
	SecretID string
	// Stage is the version stage read (AWSCURRENT, AWSPREVIOUS), or
	// AWSCURRENT for a rotation.
	Stage string
	// Rotate is true for a PutSecretValue, false for a read.
	Rotate bool
	// Kind is the classification sentinel, nil if unclassified.
	Kind error
	// Err is the SDK error.
	Err error
}

// Error explains the failure and, where it can, the fix.
func (e *SecretError) Error() string {
	verb := fmt.Sprintf("read chaos key secret %q (%s)", e.SecretID, e.Stage)
	perm := "secretsmanager:GetSecretValue on the secret (and kms:Decrypt on its KMS key)"
	if e.Rotate {
		verb = fmt.Sprintf("rotate chaos key secret %q", e.SecretID)
		perm = "secretsmanager:PutSecretValue on the secret (and kms:GenerateDataKey on its KMS key)"
	}
	msg := apiMessage(e.Err)
	switch e.Kind {
	case ErrNoKey:
		if e.Rotate {
			return fmt.Sprintf("%s: the secret does not exist in this account and region; create it with `aws secretsmanager create-secret --name %s`, then run `koshactl chaos key rotate` again", verb, e.SecretID)
		}
		return fmt.Sprintf("%s: %v: the secret does not exist in this account and region, or has no %s version; create it with `aws secretsmanager create-secret --name %s` if needed, then run `koshactl chaos key rotate` to store a key", verb, ErrNoKey, e.Stage, e.SecretID)
	case ErrAccessDenied:
		return fmt.Sprintf("%s: access denied; the caller needs %s: %s", verb, perm, msg)
	case ErrThrottled:
		return fmt.Sprintf("%s: throttled by Secrets Manager after retries; try again shortly: %s", verb, msg)
	case ErrCredentials:
		return fmt.Sprintf("%s: AWS rejected the credentials (expired session or wrong profile?): %s", verb, msg)
	case ErrUnavailable:
		return fmt.Sprintf("%s: Secrets Manager could not be reached or failed; check the network and region, then retry: %s", verb, msg)
	}
	return fmt.Sprintf("%s: %v", verb, e.Err)
}

// Unwrap returns the classification sentinel and the SDK error.
func (e *SecretError) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Kind, e.Err}
}

func apiMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if m := ae.ErrorMessage(); m != "" {
			return ae.ErrorCode() + ": " + m
		}
		return ae.ErrorCode()
	}
	return err.Error()
}

var (
	accessDeniedCodes = map[string]bool{"AccessDeniedException": true, "AccessDenied": true, "DecryptionFailure": true}
	credentialCodes   = map[string]bool{
		"UnrecognizedClientException": true, "InvalidSignatureException": true, "ExpiredTokenException": true,
		"ExpiredToken": true, "InvalidClientTokenId": true, "SignatureDoesNotMatch": true,
	}
	throttleCodes = map[string]bool{
		"ThrottlingException": true, "Throttling": true, "TooManyRequestsException": true,
		"RequestLimitExceeded": true, "RequestThrottled": true, "RequestThrottledException": true,
		"LimitExceededException": true,
	}
)

func (s *SecretsManager) classify(op secretOp, stage string, err error) error {
	e := &SecretError{SecretID: s.secretID, Stage: stage, Rotate: op == opRotate, Err: err}
	var nf *types.ResourceNotFoundException
	var ae smithy.APIError
	switch {
	case errors.As(err, &nf):
		e.Kind = ErrNoKey
	case errors.As(err, &ae) && accessDeniedCodes[ae.ErrorCode()]:
		e.Kind = ErrAccessDenied
	case errors.As(err, &ae) && credentialCodes[ae.ErrorCode()]:
		e.Kind = ErrCredentials
	case errors.As(err, &ae) && throttleCodes[ae.ErrorCode()]:
		e.Kind = ErrThrottled
	case errors.Is(err, context.Canceled):
	case unreachable(err):
		e.Kind = ErrUnavailable
	}
	return e
}

// unreachable reports a failure to get any answer (network, timeout) or a
// server-side error, as opposed to a refusal.
func unreachable(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		// Status 0: the request was never answered (refused, reset, timed out).
		return re.HTTPStatusCode() == 0 || re.HTTPStatusCode() >= 500
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorFault() == smithy.FaultServer
	}
	return true
}
