// Package id implements `koshactl chaos key id`: print the ids (kids) and
// stages of the context's chaos keys, never the keys.
package id
