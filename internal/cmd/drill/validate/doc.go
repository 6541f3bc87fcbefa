// Package validate implements `koshactl drill validate`: parse drill files
// and print every problem as FILE:LINE:COL: message.
package validate
