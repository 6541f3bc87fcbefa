// Package cmdenv is what a koshactl command runs in: the [Factory] of its
// lazily built dependencies, and the resolved context ([Env]) with the
// domain services it acts through (Overrides, Audit, Buckets, KeySource,
// GaugeSource), the protected-context guard and notification. The domain
// stops here: internal/cmdutil, beneath it, knows only IO, arguments,
// prompts and output formats.
package cmdenv
