package cmdutil

import "github.com/spf13/cobra"

// noInterruptHandling is the annotation [NoInterruptHandling] sets.
const noInterruptHandling = "koshactl/no-interrupt-handling"

// NoInterruptHandling marks cmd as one whose run needs no SIGINT/SIGTERM
// handling: it changes nothing and holds nothing open (version prints what
// the binary carries), so an interrupt may end it as any Go program ends.
func NoInterruptHandling(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[noInterruptHandling] = "true"
}

// HandlesInterrupts reports whether cmd's run needs SIGINT/SIGTERM handling
// (every command not marked [NoInterruptHandling]).
func HandlesInterrupts(cmd *cobra.Command) bool {
	return cmd.Annotations[noInterruptHandling] == ""
}
