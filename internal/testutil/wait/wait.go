package wait

import "time"

// Ceiling bounds one wait for a state. A healthy run reaches the state in
// well under a second, or a few seconds on a loaded machine; Ceiling is
// what a hang costs before the test fails with what it saw last.
const Ceiling = 2 * time.Minute
