package keys

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kosha-platform/koshactl/internal/chaos"
	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
)

// SecretsManagerAPI is the part of the Secrets Manager client this package
// uses.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	UpdateSecretVersionStage(ctx context.Context, in *secretsmanager.UpdateSecretVersionStageInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.UpdateSecretVersionStageOutput, error)
}

var (
	_ SecretsManagerAPI = (*secretsmanager.Client)(nil)
	_ Source            = (*SecretsManager)(nil)
	_ Rotator           = (*SecretsManager)(nil)
)

// StagePending is the staging label a rotation puts its new version under
// until it moves AWSCURRENT there.
const StagePending = "AWSPENDING"

// HeaderLifetime is how long a header can stay valid after the key that
// signed it stopped signing: the 15-minute cap on exp plus the verifier's
// default 30 s clock-skew allowance, rounded up to the minute.
const HeaderLifetime = 16 * time.Minute

// DefaultPropagationDelay is how long koshactl keeps signing with the
// previous key after a rotation unless the context sets another delay: the
// longest a data plane using the Secrets Manager Lambda extension caches the
// secret (its default TTL, 300 s).
const DefaultPropagationDelay = 5 * time.Minute

// SecretsManager keeps the chaos key in an AWS Secrets Manager secret whose
// SecretString is standard base64 of the key. AWSCURRENT and AWSPREVIOUS
// verify, found by kid. AWSCURRENT signs once the propagation delay (see
// [SecretsManager.WithPropagation]) has passed since it was created; until
// then AWSPREVIOUS keeps signing, so data planes that cache the secret never
// see a header under a kid they do not know yet.
//
// Rotate is a compare-and-set on AWSCURRENT: see [SecretsManager.Rotate].
//
// It reads the secret on every call (no cache), which suits a CLI; a
// long-running verifier should take a [Snapshot].
type SecretsManager struct {
	api      SecretsManagerAPI
	secretID string
	clock    clock.Clock
	delay    time.Duration
}

// NewSecretsManager returns the source for secret secretID (a name or ARN)
// read through api. It has no propagation delay: AWSCURRENT signs at once.
func NewSecretsManager(api SecretsManagerAPI, secretID string) *SecretsManager {
	return &SecretsManager{api: api, secretID: secretID, clock: clock.Real{}}
}

// WithPropagation returns a copy of s that signs with AWSPREVIOUS until
// delay has passed since AWSCURRENT was created, by clk (nil: the real
// clock), and refuses to rotate until AWSCURRENT is [HeaderLifetime] plus
// delay old. Zero delay signs with AWSCURRENT at once.
func (s *SecretsManager) WithPropagation(clk clock.Clock, delay time.Duration) *SecretsManager {
	c := *s
	if clk != nil {
		c.clock = clk
	}
	c.delay = max(delay, 0)
	return &c
}

// MinRotationAge is how old AWSCURRENT must be before Rotate replaces it
// without force: its propagation delay (during which the key it replaced
// still signed) plus [HeaderLifetime] (for the last of those headers to
// expire), so the key the rotation retires signs no live header.
func (s *SecretsManager) MinRotationAge() time.Duration { return HeaderLifetime + s.delay }

// Describe returns `Secrets Manager secret "ID"`.
func (s *SecretsManager) Describe() string {
	return fmt.Sprintf("Secrets Manager secret %q", s.secretID)
}

// Current returns the signing key: AWSCURRENT, or AWSPREVIOUS while
// AWSCURRENT is younger than the propagation delay (AWSCURRENT when the
// secret has no AWSPREVIOUS to sign with).
func (s *SecretsManager) Current(ctx context.Context) (chaos.Key, error) {
	cur, err := s.stage(ctx, StageCurrent)
	if err != nil {
		return chaos.Key{}, err
	}
	if !SigningWithPrevious(cur, s.delay, s.clock.Now()) {
		return cur.Key, nil
	}
	staged, err := s.withPrevious(ctx, cur)
	if err != nil {
		return chaos.Key{}, err
	}
	return staged[len(staged)-1].Key, nil
}

// SigningWithPrevious reports whether, at now, the key before current still
// signs: current was created less than delay ago. A current with no
// creation time has propagated.
func SigningWithPrevious(current Staged, delay time.Duration, now time.Time) bool {
	return delay > 0 && !current.Created.IsZero() && now.Before(current.Created.Add(delay))
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
	staged, err := s.withPrevious(ctx, cur)
	if err != nil {
		return chaos.Key{}, err
	}
	return byKID(staged, kid, s.Describe())
}

// Keys returns AWSCURRENT and, if the secret has one, AWSPREVIOUS.
func (s *SecretsManager) Keys(ctx context.Context) ([]Staged, error) {
	cur, err := s.stage(ctx, StageCurrent)
	if err != nil {
		return nil, err
	}
	return s.withPrevious(ctx, cur)
}

// withPrevious returns cur followed by AWSPREVIOUS, when the secret has
// one.
func (s *SecretsManager) withPrevious(ctx context.Context, cur Staged) ([]Staged, error) {
	prev, err := s.stage(ctx, StagePrevious)
	switch {
	case errors.Is(err, ErrNoKey):
		return []Staged{cur}, nil
	case err != nil:
		return nil, err
	}
	return []Staged{cur, prev}, nil
}

// version is one stage's version as read, its key decoded or the reason it
// could not be.
type version struct {
	id      string
	created time.Time
	key     chaos.Key
	keyErr  error
}

func (s *SecretsManager) read(ctx context.Context, stage string) (version, error) {
	out, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{
		SecretId:     aws.String(s.secretID),
		VersionStage: aws.String(stage),
	})
	if err != nil {
		return version{}, s.classify(opRead, stage, err)
	}
	v := version{id: aws.ToString(out.VersionId), created: aws.ToTime(out.CreatedDate)}
	if out.SecretString == nil {
		what := "no SecretString"
		if out.SecretBinary != nil {
			what = "a SecretBinary instead of a SecretString"
		}
		v.keyErr = fmt.Errorf("read chaos key secret %q (%s, version %s): %w: it holds %s; chaos keys are a SecretString of standard base64 (run koshactl chaos key rotate to store one)",
			s.secretID, stage, v.id, chaos.ErrInvalidKey, what)
		return v, nil
	}
	if v.key, err = chaos.DecodeKey(*out.SecretString); err != nil {
		v.keyErr = fmt.Errorf("read chaos key secret %q (%s, version %s): %w", s.secretID, stage, v.id, err)
	}
	return v, nil
}

func (s *SecretsManager) stage(ctx context.Context, stage string) (Staged, error) {
	v, err := s.read(ctx, stage)
	if err != nil {
		return Staged{}, err
	}
	if v.keyErr != nil {
		return Staged{}, v.keyErr
	}
	return Staged{Stage: stage, Key: v.key, VersionID: v.id, Created: v.created}, nil
}

// Rotate replaces the signing key with a fresh random one, as a
// compare-and-set on AWSCURRENT:
//
//  1. read AWSCURRENT (version V) and AWSPREVIOUS;
//  2. refuse, unless opts.Force, while V is younger than
//     [SecretsManager.MinRotationAge] ([*TooSoonError]);
//  3. PutSecretValue the new key under AWSPENDING only, with a random
//     ClientRequestToken (the SDK's retries cannot create two versions);
//  4. UpdateSecretVersionStage: move AWSCURRENT to the new version, removing
//     it from V. Secrets Manager refuses when AWSCURRENT is no longer on V,
//     so of two concurrent rotations exactly one wins; the other gets a
//     [*ConflictError] (ErrConflict) and changes nothing that verifies.
//     Secrets Manager moves AWSPREVIOUS to V itself.
//  5. remove AWSPENDING from the new version, on success and on failure, so
//     no stray pending version is left.
//
// The first key of an empty secret becomes AWSCURRENT at step 3 (Secrets
// Manager makes a secret's first version current). A current value that is
// not a valid key is replaced (rotation is how to repair it); the secret
// itself must exist.
func (s *SecretsManager) Rotate(ctx context.Context, opts RotateOptions) (Rotation, error) {
	cur, err := s.read(ctx, StageCurrent)
	hasCurrent := err == nil
	if err != nil && !errors.Is(err, ErrNoKey) {
		return Rotation{}, err
	}
	rot := Rotation{PreviousVersionID: cur.id}
	if hasCurrent {
		rot.Previous = cur.key // zero when the value is not a key
		prev, err := s.read(ctx, StagePrevious)
		switch {
		case err == nil:
			rot.Retired = prev.key
		case !errors.Is(err, ErrNoKey):
			return Rotation{}, err
		}
		now := s.clock.Now()
		if allowed := cur.created.Add(s.MinRotationAge()); !opts.Force && !cur.created.IsZero() && now.Before(allowed) {
			return Rotation{}, &TooSoonError{SecretID: s.secretID, VersionID: cur.id, KID: cur.key.KID(),
				Age: now.Sub(cur.created), MinAge: s.MinRotationAge(), Delay: s.delay, AllowedAt: allowed}
		}
	}
	k, err := chaos.GenerateKey(nil)
	if err != nil {
		return Rotation{}, err
	}
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return Rotation{}, fmt.Errorf("rotate chaos key: %w", err)
	}
	put, err := s.api.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{
		SecretId:           aws.String(s.secretID),
		SecretString:       aws.String(k.ExportBase64()),
		ClientRequestToken: aws.String(hex.EncodeToString(tok[:])),
		VersionStages:      []string{StagePending},
	})
	if err != nil {
		return Rotation{}, s.classify(opRotate, StagePending, err)
	}
	newID := aws.ToString(put.VersionId)
	rot.Current, rot.VersionID = k, newID
	rot.Created = s.clock.Now()
	rot.SignsFrom = rot.Created.Add(s.delay)
	if !slices.Contains(put.VersionStages, StageCurrent) {
		in := &secretsmanager.UpdateSecretVersionStageInput{
			SecretId:        aws.String(s.secretID),
			VersionStage:    aws.String(StageCurrent),
			MoveToVersionId: aws.String(newID),
		}
		if hasCurrent {
			in.RemoveFromVersionId = aws.String(cur.id)
		}
		if _, err := s.api.UpdateSecretVersionStage(ctx, in); err != nil {
			return Rotation{}, s.failedMove(ctx, cur.id, newID, err)
		}
	}
	if err := s.unpend(ctx, newID); err != nil {
		return rot, fmt.Errorf("the chaos key was rotated (version %s is AWSCURRENT) but %w", newID, err)
	}
	return rot, nil
}

// failedMove explains a refused AWSCURRENT move after removing AWSPENDING
// from the version that will never become current: a conflict when
// AWSCURRENT is no longer the version read.
func (s *SecretsManager) failedMove(ctx context.Context, readID, newID string, moveErr error) error {
	var cleanup error
	if err := s.unpend(ctx, newID); err != nil {
		cleanup = err
	}
	err := s.classify(opRotate, StageCurrent, moveErr)
	var ae smithy.APIError
	if errors.As(moveErr, &ae) && ae.ErrorCode() == "InvalidParameterException" {
		now, rerr := s.read(context.WithoutCancel(ctx), StageCurrent)
		if rerr == nil && now.id != readID {
			err = &ConflictError{SecretID: s.secretID, ReadVersionID: readID, CurrentVersionID: now.id, CurrentKID: now.key.KID(), NewVersionID: newID}
		}
	}
	if cleanup != nil {
		return fmt.Errorf("%w; also %w", err, cleanup)
	}
	return err
}

// unpend removes AWSPENDING from version id. A label that another rotation
// has since moved to its own version is not ours to remove.
func (s *SecretsManager) unpend(ctx context.Context, id string) error {
	_, err := s.api.UpdateSecretVersionStage(context.WithoutCancel(ctx), &secretsmanager.UpdateSecretVersionStageInput{
		SecretId:            aws.String(s.secretID),
		VersionStage:        aws.String(StagePending),
		RemoveFromVersionId: aws.String(id),
	})
	var ae smithy.APIError
	if err == nil || (errors.As(err, &ae) && ae.ErrorCode() == "InvalidParameterException") {
		return nil
	}
	return fmt.Errorf("AWSPENDING could not be removed from version %s (%s); remove it with `aws secretsmanager update-secret-version-stage --secret-id %s --version-stage AWSPENDING --remove-from-version-id %s`",
		id, apiMessage(err), s.secretID, id)
}

// TooSoonError refuses a rotation while AWSCURRENT is younger than the
// minimum rotation age. It matches ErrTooSoon.
type TooSoonError struct {
	SecretID  string
	VersionID string
	// KID is AWSCURRENT's kid ("" when its value is not a key).
	KID string
	// Age is how old AWSCURRENT is; MinAge how old it must be.
	Age, MinAge time.Duration
	// Delay is the propagation delay included in MinAge.
	Delay time.Duration
	// AllowedAt is when a rotation becomes allowed.
	AllowedAt time.Time
}

// Error says why and from when a rotation is allowed.
func (e *TooSoonError) Error() string {
	return fmt.Sprintf("rotate chaos key secret %q: %v: AWSCURRENT (version %s) is only %s old; rotating before %s "+
		"(%s header lifetime + %s propagation delay after it was created) could retire a key that still signs live headers; "+
		"wait until then, or pass --force to rotate anyway",
		e.SecretID, ErrTooSoon, e.VersionID, human.Age(e.Age), e.AllowedAt.UTC().Format(time.RFC3339),
		human.Duration(HeaderLifetime), human.Duration(e.Delay))
}

// Unwrap returns ErrTooSoon.
func (e *TooSoonError) Unwrap() error { return ErrTooSoon }

// ConflictError reports a rotation that lost a race: AWSCURRENT moved
// between this rotation's read and its move. It matches ErrConflict.
type ConflictError struct {
	SecretID string
	// ReadVersionID is the AWSCURRENT this rotation read ("" for none).
	ReadVersionID string
	// CurrentVersionID and CurrentKID are AWSCURRENT now.
	CurrentVersionID, CurrentKID string
	// NewVersionID is the version this rotation put; it holds no label.
	NewVersionID string
}

// Error says what happened and what to do.
func (e *ConflictError) Error() string {
	read := e.ReadVersionID
	if read == "" {
		read = "none"
	}
	return fmt.Sprintf("rotate chaos key secret %q: %v: AWSCURRENT moved from version %s to %s (kid %s) while this rotation ran; "+
		"another rotation won and this one changed nothing (its version %s has no label and signs nothing); "+
		"check `koshactl chaos key id`, and rotate again only if that key should be replaced",
		e.SecretID, ErrConflict, read, e.CurrentVersionID, e.CurrentKID, e.NewVersionID)
}

// Unwrap returns ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

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
	// Stage is the version stage read (AWSCURRENT, AWSPREVIOUS), or the
	// one a rotation was setting (AWSPENDING, AWSCURRENT).
	Stage string
	// Rotate is true for a rotation's write, false for a read.
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
		perm = "secretsmanager:PutSecretValue and secretsmanager:UpdateSecretVersionStage on the secret (and kms:GenerateDataKey on its KMS key)"
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
