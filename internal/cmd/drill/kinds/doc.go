// Package kinds implements `koshactl drill kinds`: list the step and
// condition kinds a drill file may use.
package kinds
