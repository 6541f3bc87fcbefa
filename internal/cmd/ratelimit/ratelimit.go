package ratelimit

import (
	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/drain"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/get"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/list"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/reset"
	"github.com/kosha-platform/koshactl/internal/cmd/ratelimit/set"
)

// NewCmd returns the ratelimit command group.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ratelimit",
		Aliases: []string{"rl"},
		Short:   "Inspect, list, reset and drain per-client rate-limit buckets",
		Long: heredoc.Doc(`
			Per-client token buckets (items rl#<client_id> in the context's store), as the
			data plane reads and spends them: capacity 20 and 1 token/s unless the context
			sets its own (config set-context --ratelimit-capacity/--ratelimit-refill, which
			must match the data plane's). A client with no item has a full bucket.
			See docs/contracts/rate-limit-bucket.md.

			reset fills buckets; drain empties them. Every change is conditional, written
			with its audit record in one transaction, supports --dry-run and asks for
			confirmation on protected contexts. When the store cannot be reached to
			settle a change, the command exits 8 (outcome unknown): check the bucket
			with "koshactl ratelimit get CLIENT".
		`),
	}
	cmd.AddCommand(get.NewCmd(f), list.NewCmd(f), reset.NewCmd(f, nil), drain.NewCmd(f), set.NewCmd(f))
	return cmd
}
