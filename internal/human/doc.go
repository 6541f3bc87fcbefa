// Package human writes values the way a person reads them on a terminal.
//
// # Durations
//
// [Duration] is the one way a duration reads in koshactl's output, whether
// on a command's table, in the dashboard, in a drill's log or in an error:
//
//   - from two days up, days and hours: 2d4h, 3d;
//   - from an hour up, hours and minutes: 1h, 1h30m, 3h05m, 24h, 47h59m;
//   - from a minute up, minutes and seconds: 3m, 3m20s, 25m30s;
//   - under a minute, seconds with the decimals d has (to the millisecond):
//     45s, 1.5s, 1.234s;
//   - under a second, milliseconds (to the microsecond): 90ms, 12.3ms;
//   - under a millisecond, microseconds: 250µs; zero is 0s;
//   - a negative duration is its magnitude with a minus sign.
//
// A smaller unit is dropped when it is zero, never written as 00, and has
// two digits when it follows a bigger one (3h05m); what is below the
// smallest unit shown is dropped. What it writes, [ParseDuration] reads
// back (below two days Go's time.ParseDuration too): every duration flag is
// a [DurationFlag], so a duration koshactl echoes ("--for 2d is over …")
// can be typed back as it reads.
//
// The precision is the caller's: [Duration] writes what it is given (a
// latency, a cap, a configured interval); [Age] first drops what a person
// does not read in an age or a time left (the seconds from ten minutes up),
// then writes it the same way.
package human
