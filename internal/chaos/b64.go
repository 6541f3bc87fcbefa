package chaos

// Allocation-free base64url (RFC 4648 section 5, no padding) for the two
// fixed-size binary fields, kid (8 bytes, 11 characters) and sig (32 bytes,
// 43 characters). Decoding is strict: the unused low bits of the last
// character must be zero, so every byte string has exactly one spelling and a
// signature cannot be altered without changing the bytes it decodes to.

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// b64Value maps a byte to its 6-bit value, or 0xff when it is not in the
// base64url alphabet.
var b64Value = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(b64Alphabet); i++ {
		t[b64Alphabet[i]] = byte(i)
	}
	return t
}()

// b64Len is the unpadded encoded length of n bytes.
func b64Len(n int) int { return (n*8 + 5) / 6 }

// appendB64 appends the unpadded base64url encoding of src.
func appendB64(dst, src []byte) []byte {
	var acc uint
	var bits uint
	for _, b := range src {
		acc = acc<<8 | uint(b)
		bits += 8
		for bits >= 6 {
			bits -= 6
			dst = append(dst, b64Alphabet[(acc>>bits)&0x3f])
		}
	}
	if bits > 0 {
		dst = append(dst, b64Alphabet[(acc<<(6-bits))&0x3f])
	}
	return dst
}

// decodeB64 decodes s, which must be exactly b64Len(len(dst)) characters,
// into dst. It reports the offset of the first bad character, or -1 and
// ok=false when the length is wrong or only the trailing bits are non-zero
// (a non-canonical spelling).
func decodeB64(dst []byte, s string) (badAt int, ok bool) {
	if len(s) != b64Len(len(dst)) {
		return -1, false
	}
	n, i := 0, 0
	for ; i+4 <= len(s); i += 4 {
		a, b, c, d := b64Value[s[i]], b64Value[s[i+1]], b64Value[s[i+2]], b64Value[s[i+3]]
		if (a|b|c|d)&0xc0 != 0 {
			return firstBad(s, i), false
		}
		dst[n] = a<<2 | b>>4
		dst[n+1] = b<<4 | c>>2
		dst[n+2] = c<<6 | d
		n += 3
	}
	switch len(s) - i {
	case 2:
		a, b := b64Value[s[i]], b64Value[s[i+1]]
		if (a|b)&0xc0 != 0 {
			return firstBad(s, i), false
		}
		if b&0x0f != 0 {
			return -1, false
		}
		dst[n] = a<<2 | b>>4
	case 3:
		a, b, c := b64Value[s[i]], b64Value[s[i+1]], b64Value[s[i+2]]
		if (a|b|c)&0xc0 != 0 {
			return firstBad(s, i), false
		}
		if c&0x03 != 0 {
			return -1, false
		}
		dst[n] = a<<2 | b>>4
		dst[n+1] = b<<4 | c>>2
	}
	return -1, true
}

func firstBad(s string, from int) int {
	for i := from; i < len(s); i++ {
		if b64Value[s[i]] == 0xff {
			return i
		}
	}
	return -1
}
