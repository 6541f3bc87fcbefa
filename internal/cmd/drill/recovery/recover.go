package recovery

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/notify"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// Options are the parsed flags and argument.
type Options struct {
	Journal        string
	JUnit          string
	AllowProtected bool
	Yes            bool
	NoNotify       bool
	Output         string
}

// NewCmd builds the command.
func NewCmd(f *cmdenv.Factory) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "recover JOURNAL",
		Short: "Finish the rollbacks of a drill run that died, from its journal",
		Long: heredoc.Doc(`
			Read the journal a drill run left (drill run --journal) and run every rollback
			it did not finish (pending, running, failed or abandoned), in reverse order of
			registration. The journal only says where to look; the lever's item and the
			audit trail decide what to do. An override is acted on only while its item
			carries the write_id of one of the run's changes (the change token its audit
			record carries, with the run's run_id), and one someone else wrote since is left
			alone and reported; the override the drill replaced is put back from the
			before-image of the run's own record of that change (never from the journal, nor
			from a record no item points at), in one transaction with its audit record, under
			the rules of any new override (a reason, at most the context's max-override
			left, no expiry only with --yes); an override the drill cleared is not put back
			by recover (an absent item proves nothing): it says how to restore it by hand;
			a bucket is set back to its level before the drill (the audit record's),
			refilled since; a chaos header lived only in the dead process. Rollback steps of
			the drill file (shell, http) are not run: they are reported for you to do by
			hand. A journal that disagrees with the audit trail (another run id, actor, or a
			change the run did not record) is refused, one line per disagreement, and
			nothing is written.

			It refuses while the run is alive: drill run holds the journal's lock file
			(JOURNAL.lock, with flock) for its whole life and writes its pid, host and start
			time into it; the kernel releases the lock when the process ends, however it
			ends. Recover says which it found: "a run is still going: pid N started at T on
			host H", or "the lock is stale: pid N is gone". It also checks the run's pid
			itself (on Linux with its start time, so a reused pid is not taken for the run;
			elsewhere the pid alone), and refuses if it is alive. The recovery is written to
			the journal (each rollback's recovered_at, and a recoveries entry), to the audit
			log, and with --junit as JUnit XML. A second recover finds nothing pending and
			does nothing.

			It acts on the journal's context and store; selecting another context, or a
			context whose store is not the journal's, is refused. A protected context needs
			--allow-protected.

			Exit codes: 0 every pending rollback succeeded (or none was pending); 2 the
			journal cannot be used, or disagrees with the audit trail (nothing written);
			4 the run (or another recover) is still alive; 5 the store or its audit trail
			cannot be read; 1 every rollback restored its lever, but the recovery's own
			record (drill.recover) could not be written; 9 a rollback failed, or its
			outcome is unknown (the store could not be reached to settle it: its line
			says what to check).
		`),
		Example: heredoc.Doc(`
			koshactl drill recover out/drill.json
			koshactl drill recover out/drill.json --junit out/recover.xml
		`),
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Journal = args[0]
			return Run(c.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.JUnit, "junit", "", "write the journal, with the recovery, as JUnit XML to this file")
	fl.BoolVar(&opts.AllowProtected, "allow-protected", false, "allow recovering on a protected context")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "restore an override that never expires (one the drill replaced had no expiry)")
	cmdutil.AddNoNotifyFlag(cmd, &opts.NoNotify)
	cmdutil.AddOutputFlag(cmd, &opts.Output)
	_ = cmd.MarkFlagFilename("junit")
	return cmd
}

// Run recovers the journal's run.
func Run(ctx context.Context, f *cmdenv.Factory, opts *Options) error {
	ios := f.IOStreams
	if opts.JUnit != "" {
		if err := fsutil.CheckOutput(opts.JUnit, true); err != nil {
			return cmdutil.Usagef("--junit %s: %v; nothing was done", opts.JUnit, err)
		}
	}
	s := &runner.RecoverSession{Journal: opts.Journal, JUnit: opts.JUnit}
	defer s.Close()
	j, note, err := s.Open()
	if going := (*runner.StillGoingError)(nil); errors.As(err, &going) {
		return exitcode.Wrap(exitcode.Conflict, err)
	}
	if err != nil {
		return cmdutil.UsageError(err)
	}
	pending := runner.Pending(j)
	if len(pending) == 0 {
		fmt.Fprintf(ios.Out, "nothing to recover: every rollback of drill %s run %s has run (%d ok)\n", textsafe.Line(j.Drill.Name), textsafe.Line(j.RunID), len(j.Rollbacks))
		return nil
	}
	fmt.Fprintln(ios.ErrOut, textsafe.Line(note))
	if f.ContextName, err = s.Target(j, f.ContextName); err != nil {
		return cmdutil.UsageError(err)
	}
	env, err := f.Env(ctx)
	if err != nil {
		return err
	}
	if err := s.CheckStore(j, env.Name, env.Store.Describe()); err != nil {
		return cmdutil.UsageError(err)
	}
	if env.Context.Protected && !opts.AllowProtected {
		return exitcode.Errorf(exitcode.Refused, "context %q is protected: pass --allow-protected to recover on it; nothing was done", env.Name)
	}
	if err := cmdenv.CheckNoNotify(env, opts.NoNotify); err != nil {
		return err
	}
	deps, err := run.NewDeps(ctx, f, env, "")
	if err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "recovering drill %s run %s on %s: %s pending\n", textsafe.Line(j.Drill.Name), textsafe.Line(j.RunID), env.Describe(), human.Count(int64(len(pending)), "rollback"))
	rv := &runner.Recovery{Deps: deps, Trail: env.Audit(), AllowNoExpiry: opts.Yes,
		Log: func(line string) { fmt.Fprintln(ios.ErrOut, "  "+textsafe.Line(line)) }}
	if !opts.NoNotify && env.Notifier != nil {
		rv.Notifier = env.Notifier.For(notify.SourceDrill, nil)
	}
	rec, err := rv.Run(ctx, j)
	var dis *runner.DisagreementError
	if errors.As(err, &dis) {
		for _, line := range dis.Lines {
			fmt.Fprintln(ios.ErrOut, "  disagreement: "+textsafe.Line(line))
		}
		return cmdutil.Usagef("journal %s disagrees with the audit trail of run %s (%s above): it was edited, or is not this run's; recover acts only on what the audit trail records; nothing was done", opts.Journal, j.RunID, human.Count(int64(len(dis.Lines)), "disagreement"))
	}
	if err != nil {
		return fmt.Errorf("%w; nothing was done", err)
	}
	werr := s.Finish(ctx, j)
	if opts.Output != cmdutil.FormatTable {
		if err := cmdutil.PrintStructured(ios.Out, opts.Output, j); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(ios.Out, "recovered drill %s run %s: %s\n", textsafe.Line(j.Drill.Name), textsafe.Line(j.RunID), textsafe.Line(rec.Detail))
		for _, rb := range j.Rollbacks {
			run.PrintRollbackLeft(f, ios.Out, rb, rb.ID)
		}
	}
	failed := slices.ContainsFunc(j.Rollbacks, func(rb drill.RollbackRecord) bool {
		return slices.Contains(rec.Rollbacks, rb.ID) && rb.Status != drill.StatusOK
	})
	switch {
	case !rec.OK && failed:
		return exitcode.Errorf(exitcode.Rollback, "%w: drill %s run %s: a rollback failed", cmdutil.ErrSilent, j.Drill.Name, j.RunID)
	case !rec.OK:
		// Every lever restored, each with its record; the recovery's own
		// record (drill.recover, which changes no lever) was not written.
		return exitcode.Errorf(exitcode.Error, "drill %s run %s: every rollback restored its lever: %s",
			j.Drill.Name, j.RunID, rec.Detail)
	case werr != nil:
		return werr
	}
	return nil
}
