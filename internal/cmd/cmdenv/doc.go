// Package cmdenv is what a koshactl command runs in: the [Factory] of its
// lazily built dependencies, and the resolved context ([Env]) with the
// domain services it acts through (the lever service of the context's
// kinds and its guard, approvals, the policy, Audit, KeySource), the result
// envelope, the protected-context guard and notification. It serves every
// lever kind and imports none (a kind's commands get theirs with [Kind]). The domain
// stops here: internal/cmdutil, beneath it, knows only IO, arguments,
// prompts and output formats.
package cmdenv
