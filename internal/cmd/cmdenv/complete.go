package cmdenv

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// CompleteContexts completes context names from the config file (no store or
// network access).
func CompleteContexts(f *Factory) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		file, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return filter(file.Names(), prefix, nil), cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteDependencies completes the selected context's known dependencies,
// leaving out those already on the command line (no store or network access).
func CompleteDependencies(f *Factory) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		_, c, err := f.SelectedContext()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return filter(c.KnownDependencies(), prefix, args), cobra.ShellCompDirectiveNoFileComp
	}
}

func filter(names []string, prefix string, exclude []string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !slices.Contains(exclude, n) {
			out = append(out, n)
		}
	}
	return out
}
