// Package impact provides the degradation matrix of the design (LLD
// section 8) as data, and the impact of forcing dependencies open: which
// tools change behaviour, how, what a client sees, and, with a metrics
// source, how many calls a minute that touches and how many over the
// override's lifetime.
//
// # The matrix
//
// [Matrix] is one [Row] per dependency the design names: its [Effect] on
// each tool it changes (a [Behaviour]: degraded, deferred, failed, or
// unaffected where the design says so), the [Signal] a client sees in the
// tool's answer, what changes beyond the tools (rate limiting failing
// open), and whether the data plane has a breaker that an override
// forces. [Classify] is how a client reads a tool's answer. The contract
// is docs/contracts/degradation-matrix.md; its vectors
// (docs/contracts/vectors/degradation-matrix.json) are generated from this
// package, and both the Python kit and the reference data plane pass them.
//
// # Impact
//
// [Of] answers "what breaks, and for whom" for a set of dependencies
// forced for a duration: the tools whose behaviour changes, the worst
// behaviour when several dependencies touch one tool, the dependencies no
// instance would obey (no breaker), and, with a [RateSource], each tool's
// and dependency's live call rate and the calls touched over the
// duration ("about 750 screenings deferred over 30m"). A source that
// cannot be read leaves the static impact and says why; impact never
// refuses or delays a lever beyond the source's bounded read.
// [Report.Render] prints the table a command shows; [Report.Lines] the
// short lines a prompt, a notification or the dashboard shows.
//
// # One read a round
//
// [Assessor] tells the lever service each change's impact. It opens the
// context's rate source once and shares one read of every name the matrix
// and the context know among the changes assessed while it is under way or
// within [DefaultShareFor] after: a command that assesses several changes
// (apply's windows) reads the source once, not once a change.
package impact
