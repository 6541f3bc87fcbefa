//go:build !unix

package drill

import "os/exec"

// killGroup keeps exec's default: cancellation kills the process itself.
func killGroup(*exec.Cmd) {}
