// Package listing is what every list command shares (breaker list,
// ratelimit list, audit list): the structured document or the table,
// printed as the items are read ([Stream]), and the rule for stored items
// that could not be read in full (exit 10).
package listing
