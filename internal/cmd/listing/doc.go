// Package listing is the tail every list command shares (breaker list,
// ratelimit list, audit list): the structured document or the table, and
// the rule for stored items that could not be read in full (exit 10).
package listing
