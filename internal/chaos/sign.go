package chaos

import (
	"fmt"
)

// SignHeader validates f and returns the signed header for it under key:
// the signing input "v=2;kid=<kid of key>;target=...;jti=..." (v=1, without
// iat, when f has no IAT) followed by ";sig=" and the unpadded base64url
// HMAC-SHA256 of the signing input; [Header.Value] is the header's value.
// It does not look at the clock or at a context's targets; [Minter] does.
func SignHeader(key Key, f Fields) (Header, error) {
	if key.IsZero() {
		return Header{}, fmt.Errorf("sign chaos header: %w: no key", ErrInvalidKey)
	}
	if err := f.Validate(); err != nil {
		return Header{}, fmt.Errorf("sign chaos header: %w", err)
	}
	b := appendSigningInput(make([]byte, 0, 192), key.KID(), &f)
	signedLen := len(b)
	h := Header{Fields: f, KID: key.KID(), signedLen: signedLen}
	key.sum(&h.Sig, string(b))
	b = append(b, ";sig="...)
	b = appendB64(b, h.Sig[:])
	h.value = string(b)
	return h, nil
}
