package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/human"
)

// Check names one of the checks a header must pass, in the order a
// [Verifier] runs them.
type Check string

// The checks, in order. The contract fixes this order so every
// implementation names the same first failure: syntax, target, kid,
// signature, expiry, cap, freeze. Signature comes before the time checks so
// that an "expired" or "cap" verdict always concerns a header we really
// minted, and the freeze check comes last, so a header it refuses was
// otherwise good (its audit record says the freeze stopped a real fault).
const (
	// CheckSyntax: the value follows the grammar ([Parse]).
	CheckSyntax Check = "syntax"
	// CheckTarget: the target is one the context allows.
	CheckTarget Check = "target"
	// CheckKID: the kid names a key the keyring holds.
	CheckKID Check = "kid"
	// CheckSignature: the HMAC over the signing input matches sig.
	CheckSignature Check = "signature"
	// CheckExpiry: now is before exp.
	CheckExpiry Check = "expiry"
	// CheckCap: exp is at most the cap (15 minutes) plus the clock-skew
	// allowance ahead of now.
	CheckCap Check = "cap"
	// CheckFreeze: the fleet is not frozen, and the header was issued at or
	// after the end of its last freeze (docs/contracts/freeze.md): a
	// [FreezeRule] decides it.
	CheckFreeze Check = "freeze"
)

// Checks returns every check in the order they run.
func Checks() []Check {
	return []Check{CheckSyntax, CheckTarget, CheckKID, CheckSignature, CheckExpiry, CheckCap, CheckFreeze}
}

// Sentinel errors for failed checks, matched with errors.Is on a
// *CheckError. A syntax failure matches [ErrSyntax] and an unknown kid
// [ErrUnknownKID].
var (
	// ErrTargetNotAllowed: the target is not one of the context's chaos
	// targets.
	ErrTargetNotAllowed = errors.New("chaos target not allowed")
	// ErrBadSignature: the signature does not match.
	ErrBadSignature = errors.New("chaos header signature mismatch")
	// ErrExpired: the header's exp has passed.
	ErrExpired = errors.New("chaos header expired")
	// ErrTooFarAhead: exp is further ahead than the cap allows.
	ErrTooFarAhead = errors.New("chaos header expiry beyond the cap")
	// ErrFrozen: the fleet's freeze refuses the header (a *FreezeRefusal
	// says which freeze and why).
	ErrFrozen = errors.New("chaos header refused by the fleet's freeze")
)

// FreezeRule decides the freeze check: whether a header may be honoured
// while the fleet's freeze item reads as it does. internal/freeze
// implements it for the freeze item (docs/contracts/freeze.md); this
// package only runs it in its place among the checks.
type FreezeRule interface {
	// AdmitChaos returns nil when a header issued at issued (unix seconds,
	// [Fields.Issued]) may be honoured at now, and otherwise a
	// *FreezeRefusal saying why not.
	AdmitChaos(issued int64, now time.Time) error
}

// FreezeRefusal is a header the freeze check refused.
type FreezeRefusal struct {
	// Frozen is true when the fleet is frozen (or its freeze cannot be
	// known): every header is refused. False: the header was issued before
	// the end of the last freeze, and is void for good.
	Frozen bool
	// Reason says why, naming the freeze (who, why, the reference, until
	// when).
	Reason string
	// Freeze names the freeze in the audit record of the refusal.
	Freeze FreezeRef
}

// Error returns the reason.
func (e *FreezeRefusal) Error() string { return e.Reason }

// Is makes a FreezeRefusal match [ErrFrozen].
func (e *FreezeRefusal) Is(target error) bool { return target == ErrFrozen }

// FreezeRef names a freeze in a [Rejection]: who set it, its reference
// (INC-123) and the token of the write that stored it, shared with the
// freeze's own audit record.
type FreezeRef struct {
	Actor   string `json:"actor,omitempty"`
	Ref     string `json:"ref,omitempty"`
	WriteID string `json:"write_id,omitempty"`
}

// CheckError is a header that failed a check. It unwraps to the check's
// sentinel error (or, for syntax, to the *FieldError).
type CheckError struct {
	// Check is the first check the header failed.
	Check Check
	// Field names the offending wire field, when one is to blame.
	Field string
	// Reason explains the failure.
	Reason string

	err error
}

// Error returns "chaos header rejected by the <check> check: <reason>".
func (e *CheckError) Error() string {
	if e.Check == CheckSyntax && e.Field != "" {
		return "chaos header rejected by the syntax check: field " + e.Field + ": " + e.Reason
	}
	return "chaos header rejected by the " + string(e.Check) + " check: " + e.Reason
}

// Unwrap returns the underlying sentinel or *FieldError.
func (e *CheckError) Unwrap() error { return e.err }

// Options configure a [Verifier]. The zero value is the contract's
// defaults.
type Options struct {
	// Clock supplies now for Verify and Explain. Nil means the wall clock.
	Clock clock.Clock
	// Targets are the targets the context allows. Nil means
	// [DefaultTargets].
	Targets []Target
	// MaxAhead is the cap on how far ahead exp may be. Zero means [MaxTTL]
	// (15 minutes), which is also the largest value allowed: a context may
	// tighten the cap, never loosen it.
	MaxAhead time.Duration
	// Skew is the clock-skew allowance added to the cap, so a header minted
	// on a machine whose clock runs slightly ahead still passes. Zero means
	// [DefaultSkew] (30 seconds); negative means none; at most [MaxSkew].
	// Expiry gets no allowance: a header is dead at exp by the verifier's
	// clock.
	Skew time.Duration
	// Freeze, when set, is the fleet's freeze as the verifier knows it:
	// Verify and Explain run the freeze check with it. Nil: Verify stops
	// after the cap (the caller runs [CheckFreezeRule] with its own state,
	// as a data plane whose instances each cache the freeze does) and
	// Explain reports the freeze check skipped.
	Freeze FreezeRule
}

// Verifier checks chaos header values against a keyring, a set of allowed
// targets and a clock. It is safe for concurrent use.
type Verifier struct {
	keys     Keyring
	clock    clock.Clock
	targets  []Target
	maxAhead time.Duration
	skew     time.Duration
	freeze   FreezeRule
}

// NewVerifier returns a Verifier that looks keys up in keys.
func NewVerifier(keys Keyring, opts Options) (*Verifier, error) {
	if keys == nil {
		return nil, errors.New("new chaos verifier: no keyring")
	}
	v := &Verifier{keys: keys, clock: opts.Clock, maxAhead: opts.MaxAhead, skew: opts.Skew, freeze: opts.Freeze}
	if v.clock == nil {
		v.clock = clock.Real{}
	}
	switch {
	case v.maxAhead == 0:
		v.maxAhead = MaxTTL
	case v.maxAhead < 0 || v.maxAhead > MaxTTL:
		return nil, fmt.Errorf("new chaos verifier: max ahead %s is outside (0, %s]; the cap can be tightened, never loosened", v.maxAhead, MaxTTL)
	}
	switch {
	case v.skew == 0:
		v.skew = DefaultSkew
	case v.skew < 0:
		v.skew = 0
	case v.skew > MaxSkew:
		return nil, fmt.Errorf("new chaos verifier: skew allowance %s is above the %s maximum", v.skew, MaxSkew)
	}
	targets, err := checkTargets(opts.Targets)
	if err != nil {
		return nil, fmt.Errorf("new chaos verifier: %w", err)
	}
	v.targets = targets
	return v, nil
}

func checkTargets(ts []Target) ([]Target, error) {
	if ts == nil {
		return DefaultTargets(), nil
	}
	if len(ts) == 0 {
		return nil, errors.New("no chaos targets allowed; leave targets unset for the defaults")
	}
	for _, t := range ts {
		if _, err := ParseTarget(string(t)); err != nil {
			return nil, err
		}
	}
	return append([]Target(nil), ts...), nil
}

// Targets returns the targets v allows.
func (v *Verifier) Targets() []Target { return append([]Target(nil), v.targets...) }

// MaxAhead returns the cap v enforces, without the skew allowance.
func (v *Verifier) MaxAhead() time.Duration { return v.maxAhead }

// Skew returns the clock-skew allowance v adds to the cap.
func (v *Verifier) Skew() time.Duration { return v.skew }

func (v *Verifier) allowed(t Target) bool { return slices.Contains(v.targets, t) }

// Verify checks value at the verifier clock's now and returns the header if
// every check passes. A header that fails a check yields a *CheckError for
// the first failure; a keyring that cannot be read yields its own error
// (wrapped, not a *CheckError). Either way the data plane ignores the
// header. When the value parsed, the header is returned even on failure, so
// [NewRejection] can record its kid, target and jti.
//
// Verify is the data-plane path: with a keyring whose lookups do not
// allocate (chaostest.KeySet) it does not allocate unless the header is
// rejected.
func (v *Verifier) Verify(ctx context.Context, value string) (Header, error) {
	return v.VerifyAt(ctx, value, v.clock.Now())
}

// VerifyAt is [Verifier.Verify] at a given now.
func (v *Verifier) VerifyAt(ctx context.Context, value string, now time.Time) (Header, error) {
	h, err := Parse(value)
	if err != nil {
		return Header{}, syntaxError(err)
	}
	if !v.allowed(h.Target) {
		return h, v.targetError(h.Target)
	}
	key, err := v.keys.ByKID(ctx, h.KID)
	if err != nil {
		return h, v.kidError(err)
	}
	if !key.checkSum(h.SigningInput(), &h.Sig) {
		return h, signatureError(&h)
	}
	if err := v.checkExpiry(&h, now); err != nil {
		return h, err
	}
	if err := v.checkCap(&h, now); err != nil {
		return h, err
	}
	if v.freeze != nil {
		if err := CheckFreezeRule(&h, v.freeze, now); err != nil {
			return h, err
		}
	}
	return h, nil
}

// CheckFreezeRule runs the freeze check on h, a header that passed every
// other check, with rule at now: nil, or a *CheckError (check freeze,
// unwrapping to the *FreezeRefusal, which matches [ErrFrozen]). Its field
// is "" when the fleet is frozen (the whole header is refused), and iat (or
// exp for a v=1 header, whose issue time comes from it) when the header was
// issued before the end of the last freeze.
func CheckFreezeRule(h *Header, rule FreezeRule, now time.Time) error {
	err := rule.AdmitChaos(h.Issued(), now)
	if err == nil {
		return nil
	}
	var fr *FreezeRefusal
	if !errors.As(err, &fr) {
		fr = &FreezeRefusal{Frozen: true, Reason: "the fleet's freeze cannot be evaluated: " + err.Error()}
	}
	ce := &CheckError{Check: CheckFreeze, Reason: fr.Reason, err: fr}
	if !fr.Frozen {
		ce.Field = fieldIAT
		if h.IAT == 0 {
			ce.Field = fieldExp
		}
	}
	return ce
}

func syntaxError(err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &CheckError{Check: CheckSyntax, Field: fe.Field, Reason: fe.Problem, err: fe}
	}
	return &CheckError{Check: CheckSyntax, Reason: err.Error(), err: err}
}

func (v *Verifier) targetError(t Target) error { return targetNotAllowed(t, v.targets) }

func targetNotAllowed(t Target, allowed []Target) *CheckError {
	return &CheckError{Check: CheckTarget, Field: fieldTarget, err: ErrTargetNotAllowed,
		Reason: fmt.Sprintf("%s is not one of this context's chaos targets (%s)", quote(string(t)), JoinTargets(allowed))}
}

// kidError turns a keyring error into a kid check failure, or returns it
// wrapped when the keyring itself failed.
func (v *Verifier) kidError(err error) error {
	if errors.Is(err, ErrUnknownKID) {
		return &CheckError{Check: CheckKID, Field: fieldKID, Reason: err.Error(), err: err}
	}
	return fmt.Errorf("look up chaos key: %w", err)
}

func signatureError(h *Header) error {
	return &CheckError{Check: CheckSignature, Field: fieldSig, err: ErrBadSignature,
		Reason: fmt.Sprintf("HMAC-SHA256 of the signed bytes under kid %s does not match sig; the header was altered or signed with a different key", h.KID)}
}

func (v *Verifier) checkExpiry(h *Header, now time.Time) error {
	exp := h.ExpTime()
	if now.Before(exp) {
		return nil
	}
	return &CheckError{Check: CheckExpiry, Field: fieldExp, err: ErrExpired,
		Reason: fmt.Sprintf("expired at %s, %s ago", exp.UTC().Format(time.RFC3339), human.Duration(now.Sub(exp).Round(time.Millisecond)))}
}

func (v *Verifier) checkCap(h *Header, now time.Time) error {
	ahead := h.ExpTime().Sub(now)
	if ahead <= v.maxAhead+v.skew {
		return nil
	}
	return &CheckError{Check: CheckCap, Field: fieldExp, err: ErrTooFarAhead,
		Reason: fmt.Sprintf("exp is %s ahead, beyond the %s cap plus %s clock-skew allowance; headers live at most %s", human.Duration(ahead.Round(time.Millisecond)),
			human.Duration(v.maxAhead), human.Duration(v.skew), human.Duration(v.maxAhead))}
}

// Outcome is the result of one check in a [Report].
type Outcome string

// Outcomes.
const (
	// OutcomePass: the check passed.
	OutcomePass Outcome = "pass"
	// OutcomeFail: the header failed the check.
	OutcomeFail Outcome = "fail"
	// OutcomeSkip: the check could not run because an earlier one failed.
	OutcomeSkip Outcome = "skip"
	// OutcomeError: the check could not run because the keyring (or, for
	// the freeze check, the freeze item) could not be read.
	OutcomeError Outcome = "error"
)

// CheckResult is one line of a [Report].
type CheckResult struct {
	Check   Check   `json:"check"`
	Outcome Outcome `json:"outcome"`
	// Field names the wire field at fault, if any.
	Field string `json:"field,omitempty"`
	// Reason explains the outcome, pass or fail.
	Reason string `json:"reason"`
}

// Report is the outcome of every check on one value, for `chaos verify` to
// explain. Unlike Verify, Explain runs every check it can (expiry and cap
// still run when the signature fails), so an operator sees all problems at
// once.
type Report struct {
	// OK is true when every check passed.
	OK bool `json:"ok"`
	// Now is the instant the time checks used.
	Now time.Time `json:"now"`
	// Header is the parsed header, nil when the syntax check failed.
	Header *Header `json:"header,omitempty"`
	// Checks holds one result per check, in [Checks] order.
	Checks []CheckResult `json:"checks"`

	err error
}

// Err returns nil when the header passed, the *CheckError of the first
// failed check, or, when the keyring or the freeze could not be read, that
// error (which is not a *CheckError).
func (r *Report) Err() error { return r.err }

// Explain runs every check on value at the verifier clock's now.
func (v *Verifier) Explain(ctx context.Context, value string) *Report {
	return v.ExplainAt(ctx, value, v.clock.Now())
}

// ExplainAt is [Verifier.Explain] at a given now.
func (v *Verifier) ExplainAt(ctx context.Context, value string, now time.Time) *Report {
	r := &Report{Now: now}
	add := func(c Check, err error, passReason string) {
		res := CheckResult{Check: c, Outcome: OutcomePass, Reason: passReason}
		var ce *CheckError
		switch {
		case err == nil:
		case errors.As(err, &ce):
			res.Outcome, res.Field, res.Reason = OutcomeFail, ce.Field, ce.Reason
		default:
			res.Outcome, res.Reason = OutcomeError, err.Error()
		}
		if err != nil && r.err == nil {
			r.err = err
		}
		r.Checks = append(r.Checks, res)
	}
	skip := func(c Check, why string) {
		r.Checks = append(r.Checks, CheckResult{Check: c, Outcome: OutcomeSkip, Reason: "not checked: " + why})
	}

	h, err := Parse(value)
	if err != nil {
		add(CheckSyntax, syntaxError(err), "")
		for _, c := range Checks()[1:] {
			skip(c, "the value did not parse")
		}
		return r
	}
	r.Header = &h
	add(CheckSyntax, nil, fmt.Sprintf("well-formed v=%d header: %s, kid %s, jti %s", h.Version(), h.Summary(), h.KID, h.JTI))

	if v.allowed(h.Target) {
		add(CheckTarget, nil, fmt.Sprintf("%s is one of this context's chaos targets", h.Target))
	} else {
		add(CheckTarget, v.targetError(h.Target), "")
	}

	key, err := v.keys.ByKID(ctx, h.KID)
	if err != nil {
		add(CheckKID, v.kidError(err), "")
		skip(CheckSignature, "no key for kid "+h.KID)
	} else {
		add(CheckKID, nil, fmt.Sprintf("kid %s names a key this context holds", h.KID))
		if key.checkSum(h.SigningInput(), &h.Sig) {
			add(CheckSignature, nil, fmt.Sprintf("HMAC-SHA256 of the %d signed bytes matches sig (constant-time comparison)", len(h.SigningInput())))
		} else {
			add(CheckSignature, signatureError(&h), "")
		}
	}

	exp := h.ExpTime()
	add(CheckExpiry, v.checkExpiry(&h, now), fmt.Sprintf("expires at %s, in %s", exp.UTC().Format(time.RFC3339), human.Duration(exp.Sub(now).Round(time.Millisecond))))
	capDetail := fmt.Sprintf("exp is %s ahead, within the %s cap plus %s clock-skew allowance", human.Duration(exp.Sub(now).Round(time.Millisecond)),
		human.Duration(v.maxAhead), human.Duration(v.skew))
	if !now.Before(exp) {
		capDetail = "exp is not ahead of now"
	}
	add(CheckCap, v.checkCap(&h, now), capDetail)

	if v.freeze == nil {
		skip(CheckFreeze, "no freeze state given")
	} else {
		issued := time.Unix(h.Issued(), 0).UTC().Format(time.RFC3339)
		how := "issued at " + issued + " (iat)"
		if h.IAT == 0 {
			how = "a v=1 header without iat: counted as issued at " + issued + ", exp minus the 15-minute cap"
		}
		err := v.freeze.AdmitChaos(h.Issued(), now)
		var fr *FreezeRefusal
		if err != nil && errors.As(err, &fr) {
			err = CheckFreezeRule(&h, v.freeze, now)
		}
		// Any other error: the freeze could not be known (its item could
		// not be read). Verify refuses then; Explain says undecided.
		add(CheckFreeze, err, "the fleet is not frozen, and the header was "+how+", not before the end of a freeze")
	}

	r.OK = r.err == nil
	return r
}
