package chaos

import (
	"encoding/base64"
	"strings"
)

// b64 is unpadded base64url (RFC 4648 section 5) for the two fixed-size
// binary fields, kid (8 bytes, 11 characters) and sig (32 bytes, 43
// characters). Decoding is strict: the unused low bits of the last
// character must be zero, so every byte string has exactly one spelling and a
// signature cannot be altered without changing the bytes it decodes to.
var b64 = base64.RawURLEncoding.Strict()

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// b64Len is the unpadded encoded length of n bytes.
func b64Len(n int) int { return b64.EncodedLen(n) }

// appendB64 appends the unpadded base64url encoding of src.
func appendB64(dst, src []byte) []byte { return b64.AppendEncode(dst, src) }

// decodeB64 decodes s, which must be exactly b64Len(len(dst)) characters,
// into dst, without allocating. It reports the offset of the first bad
// character, or -1 and ok=false when the length is wrong or only the
// trailing bits are non-zero (a non-canonical spelling).
func decodeB64(dst []byte, s string) (badAt int, ok bool) {
	if len(s) != b64Len(len(dst)) {
		return -1, false
	}
	if i := firstNonB64(s); i >= 0 {
		return i, false
	}
	var buf [64]byte // s is at most 43 characters (sig); the copy stays on the stack
	n, err := b64.Decode(dst, append(buf[:0], s...))
	return -1, err == nil && n == len(dst)
}

// firstNonB64 returns the offset of the first byte of s outside the
// base64url alphabet, or -1.
func firstNonB64(s string) int {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(b64Alphabet, s[i]) < 0 {
			return i
		}
	}
	return -1
}
