// Package levers is planned breaker overrides as code: a levers file lists,
// per context, windows in which a dependency's breaker is to be forced open
// (a database upgrade, a provider's announced maintenance), once or weekly.
//
// The package parses and checks a file (every problem with its line,
// nothing applied: [Parse]), says which window is in force at an instant
// ([Window.At]), compares the file with the table's overrides and the
// fleet's gauges ([Compare]: the three-way diff) and plans what makes the
// table match the file for the overrides the file manages ([Plan]). Those
// carry a marker naming the file, the window and a hash of its content
// ([Marker]); an override without this file's marker (an incident lever,
// another file's window) is shown and never touched.
//
// The contract is docs/contracts/levers-file.md.
package levers
