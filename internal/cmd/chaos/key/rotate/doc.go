// Package rotate implements `koshactl chaos key rotate`: store a fresh
// random signing key, keep the replaced one as the previous (still
// verifying) key, and audit the rotation by kid.
package rotate
