package mcptools

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	auditlist "github.com/kosha-platform/koshactl/internal/cmd/audit/list"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/get"
	"github.com/kosha-platform/koshactl/internal/cmd/breaker/status"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/run"
	"github.com/kosha-platform/koshactl/internal/cmd/drill/validate"
	freezestatus "github.com/kosha-platform/koshactl/internal/cmd/freeze/status"
	rlget "github.com/kosha-platform/koshactl/internal/cmd/ratelimit/get"
	rllist "github.com/kosha-platform/koshactl/internal/cmd/ratelimit/list"
	reqlist "github.com/kosha-platform/koshactl/internal/cmd/request/list"
	"github.com/kosha-platform/koshactl/internal/cmdutil"
	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/kinds"
	"github.com/kosha-platform/koshactl/internal/drill/runner"
	"github.com/kosha-platform/koshactl/internal/fsutil"
	"github.com/kosha-platform/koshactl/internal/gameday"
	"github.com/kosha-platform/koshactl/internal/mcpserver"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/ratelimit"
)

// MaxListLimit bounds how many items a listing tool returns.
const MaxListLimit = 500

// DefaultListLimit is a listing tool's limit when the agent names none.
const DefaultListLimit = 50

// The read tools' arguments.
type (
	statusArgs struct {
		Dependencies []string `json:"dependencies,omitempty" jsonschema:"only these dependencies (default: every one the context knows)"`
		Instances    bool     `json:"instances,omitempty" jsonschema:"read the per-instance breakdown (on CloudWatch one metric per instance)"`
		Timeline     bool     `json:"timeline,omitempty" jsonschema:"include the per-minute timeline"`
	}
	dependencyArgs struct {
		Dependency string `json:"dependency" jsonschema:"the dependency, as breaker status names it"`
	}
	auditArgs struct {
		Since   string `json:"since,omitempty" jsonschema:"only records newer than this, a Go duration like 2h"`
		Until   string `json:"until,omitempty" jsonschema:"only records before this: RFC3339 or a duration ago"`
		Subject string `json:"subject,omitempty" jsonschema:"only records about this subject (breaker#openai; a trailing * matches a prefix)"`
		Action  string `json:"action,omitempty" jsonschema:"only records of this action (breaker.force-open)"`
		Actor   string `json:"actor,omitempty" jsonschema:"only records by this actor (a trailing * matches a prefix)"`
		Limit   int    `json:"limit,omitempty" jsonschema:"at most this many records, newest first (default 50, at most 500)"`
	}
	clientArgs struct {
		Client string `json:"client" jsonschema:"the client id"`
	}
	bucketListArgs struct {
		Throttled bool   `json:"throttled,omitempty" jsonschema:"only clients being limited now"`
		Sort      string `json:"sort,omitempty" jsonschema:"client, tokens or updated (default client)"`
		Limit     int    `json:"limit,omitempty" jsonschema:"at most this many buckets (default 50, at most 500)"`
	}
	requestArgs struct {
		All     bool   `json:"all,omitempty" jsonschema:"decided and expired requests too"`
		Reviews bool   `json:"reviews,omitempty" jsonschema:"break-glass reviews instead of requests"`
		Limit   int    `json:"limit,omitempty" jsonschema:"at most this many, newest first (default 50, at most 500)"`
		Cursor  string `json:"cursor,omitempty" jsonschema:"the next_cursor of the answer before: list what is older (the next page)"`
	}
	filesArgs struct {
		Files []string `json:"files" jsonschema:"drill files, relative paths under the server's working directory"`
	}
	planArgs struct {
		File string   `json:"file" jsonschema:"a drill file, a relative path under the server's working directory"`
		Vars []string `json:"vars,omitempty" jsonschema:"settings of the drill's vars, each written as NAME=VALUE"`
	}
	journalArgs struct {
		Journal string `json:"journal" jsonschema:"a drill run's JSON journal, a relative path under the server's working directory"`
	}
)

// reader answers the read tools through the commands' own read functions,
// so each returns what -o json prints and costs what the command costs.
type reader struct {
	f   *cmdenv.Factory
	env *cmdenv.Env
}

func (r reader) status(ctx context.Context, a statusArgs) (mcpserver.Output, error) {
	res, err := status.Read(ctx, r.f, &status.Options{Dependencies: a.Dependencies, Instances: a.Instances, Timeline: a.Timeline,
		Interval: status.DefaultInterval})
	out := mcpserver.Output{Doc: res}
	if err != nil && res.Kind == "" {
		return mcpserver.Output{}, err
	}
	forced, notObeyed := 0, 0
	for _, d := range res.Dependencies {
		if d.State == metrics.Forced {
			forced++
		}
		if d.Fleet != nil && d.Fleet.Verdict == metrics.NotObeyed {
			notObeyed++
		}
	}
	out.Summary = fmt.Sprintf("Breaker status of context %s: %d dependencies, %d forced open, %d overrides not obeyed by the fleet; store ok %t, gauges ok %t.",
		res.Context, len(res.Dependencies), forced, notObeyed, res.Store.OK, res.Gauges.OK)
	return out, err
}

func (r reader) freeze(ctx context.Context, _ struct{}) (mcpserver.Output, error) {
	res, err := freezestatus.Read(ctx, r.f)
	if err != nil {
		return mcpserver.Output{}, err
	}
	sum := "The fleet is not frozen (no freeze is recorded)."
	if res.Freeze != nil {
		sum = "Fleet freeze: " + res.Freeze.Summary + "."
	}
	return mcpserver.Output{Doc: res, Summary: sum}, nil
}

func (r reader) get(ctx context.Context, a dependencyArgs) (mcpserver.Output, error) {
	v, err := get.Read(ctx, r.f, &get.Options{Dependency: a.Dependency})
	if err != nil {
		return mcpserver.Output{}, err
	}
	return mcpserver.Output{Doc: v, Summary: fmt.Sprintf("The override of %s (state %s).", a.Dependency, v.State)}, nil
}

func (r reader) audit(ctx context.Context, a auditArgs) (mcpserver.Output, error) {
	limit, err := listLimit(a.Limit)
	if err != nil {
		return mcpserver.Output{}, err
	}
	opts := &auditlist.Options{Until: a.Until, Subject: a.Subject, Action: a.Action, Actor: a.Actor, Limit: limit}
	if a.Since != "" {
		d, err := time.ParseDuration(a.Since)
		if err != nil || d < 0 {
			return mcpserver.Output{}, cmdutil.Usagef("since %q: give how far back to look, like 2h", a.Since)
		}
		opts.Since = d
	}
	doc, unreadable, err := auditlist.Read(ctx, r.f, opts)
	if err != nil {
		return mcpserver.Output{}, err
	}
	return mcpserver.Output{Doc: doc, Summary: fmt.Sprintf("%d audit records, newest first; %d could not be read in full.", len(doc.Items), len(unreadable))}, nil
}

func (r reader) bucket(ctx context.Context, a clientArgs) (mcpserver.Output, error) {
	v, err := rlget.Read(ctx, r.f, &rlget.Options{Client: a.Client})
	if err != nil {
		return mcpserver.Output{}, err
	}
	return mcpserver.Output{Doc: v, Summary: fmt.Sprintf("The rate-limit bucket of %s.", a.Client)}, nil
}

func (r reader) buckets(ctx context.Context, a bucketListArgs) (mcpserver.Output, error) {
	limit, err := listLimit(a.Limit)
	if err != nil {
		return mcpserver.Output{}, err
	}
	sort := cmp.Or(a.Sort, string(ratelimit.SortClient))
	doc, _, _, err := rllist.Read(ctx, r.f, &rllist.Options{Throttled: a.Throttled, Sort: sort, Limit: limit, MaxReadUnits: rllist.DefaultMaxReadUnits})
	if err != nil {
		return mcpserver.Output{}, err
	}
	return mcpserver.Output{Doc: doc, Summary: fmt.Sprintf("%d of %d matching rate-limit buckets; %d items unreadable.", len(doc.Items), doc.Matched, len(doc.Unreadable))}, nil
}

// requests answers a page of at most limit, newest first, and the cursor
// of the next when there is one.
func (r reader) requests(ctx context.Context, a requestArgs) (mcpserver.Output, error) {
	limit, err := listLimit(a.Limit)
	if err != nil {
		return mcpserver.Output{}, err
	}
	doc, err := reqlist.Read(ctx, r.f, &reqlist.Options{All: a.All, Reviews: a.Reviews, Limit: limit, After: a.Cursor})
	if err != nil {
		return mcpserver.Output{}, err
	}
	sum := fmt.Sprintf("%d change requests, %d reviews, newest first.", len(doc.Requests), len(doc.Reviews))
	if doc.Next != "" {
		sum += " There are more: call again with cursor " + doc.Next + "."
	}
	return mcpserver.Output{Doc: doc, Summary: sum}, nil
}

func (r reader) validate(_ context.Context, a filesArgs) (mcpserver.Output, error) {
	if len(a.Files) == 0 {
		return mcpserver.Output{}, cmdutil.Usagef("files: name at least one drill file")
	}
	for _, f := range a.Files {
		if err := localPath("files", f); err != nil {
			return mcpserver.Output{}, err
		}
	}
	doc := validate.Read(a.Files)
	return mcpserver.Output{Doc: doc, Summary: fmt.Sprintf("%d drill files validated; all valid: %t.", len(doc.Files), doc.OK)}, nil
}

// plan is drill plan's, on the server's context only, with the
// environment hidden from the drill: a plan shows the values it resolved,
// and the server's environment is not the agent's to read.
func (r reader) plan(ctx context.Context, a planArgs) (mcpserver.Output, error) {
	if err := localPath("file", a.File); err != nil {
		return mcpserver.Output{}, err
	}
	// Parsed here, not by run.Parse: that prints the problems on stderr
	// (the server's log, which names calls, never a file's content) and
	// returns a silent failure the agent could not act on. The problems
	// are the tool error's result, as drill_validate gives them.
	d, probs := drill.ParseFile(kinds.Builtin(), a.File)
	if len(probs) > 0 {
		doc := validate.Result{Kind: "DrillValidation", Files: []validate.FileResult{{File: a.File, Problems: probs}}}
		return mcpserver.Output{Doc: doc}, cmdutil.Usagef("%s is not a valid drill (%d problems), the first: %s", a.File, len(probs), probs[0])
	}
	if err := run.ApplyVars(d, a.Vars); err != nil {
		return mcpserver.Output{}, err
	}
	if d.Context != "" && d.Context != r.env.Name {
		return mcpserver.Output{}, cmdutil.Usagef("drill %s is written for context %q, and this server acts on %q: plan it from a server on that context",
			d.Name, d.Context, r.env.Name)
	}
	deps, err := run.NewDeps(ctx, r.f, r.env, "")
	if err != nil {
		return mcpserver.Output{}, err
	}
	deps.LookupEnv = func(string) (string, bool) { return "", false }
	deps.Environ = nil
	p := runner.NewPlan(ctx, d, deps)
	out := mcpserver.Output{Doc: p, Summary: fmt.Sprintf("Plan of drill %s: %d problems.", d.Name, len(p.Problems))}
	if len(p.Problems) > 0 {
		return out, cmdutil.Usagef("drill %s would not run: %s", d.Name, p.Problems[0])
	}
	return out, nil
}

// GameDaySummary is the game_day_summary tool's document: the Markdown
// summary `drill report -o markdown --no-fetch` writes.
type GameDaySummary struct {
	Kind     string `json:"kind"`
	Journal  string `json:"journal"`
	Drill    string `json:"drill"`
	Outcome  string `json:"outcome"`
	Markdown string `json:"markdown"`
}

func (r reader) gameday(_ context.Context, a journalArgs) (mcpserver.Output, error) {
	if err := localPath("journal", a.Journal); err != nil {
		return mcpserver.Output{}, err
	}
	j, err := gameday.ReadJournal(a.Journal)
	if err != nil {
		return mcpserver.Output{}, cmdutil.UsageError(err)
	}
	var buf bytes.Buffer
	if err := gameday.Markdown(&buf, gameday.Input{Journal: j}); err != nil {
		return mcpserver.Output{}, err
	}
	doc := GameDaySummary{Kind: "GameDaySummary", Journal: a.Journal, Drill: j.Drill.Name, Outcome: j.Outcome, Markdown: buf.String()}
	return mcpserver.Output{Doc: doc, Long: []string{"markdown"}, Summary: fmt.Sprintf("Game-day summary of drill %s: %s.", j.Drill.Name, j.Outcome)}, nil
}

// localPath refuses a path that is not relative and under the working
// directory: the server reads the files it is told to, and only where its
// operator started it. A symbolic link is judged by where it leads: one in
// the directory pointing out of it (at ~/.aws/credentials, say, in a
// checked-out repository) is refused before anything is read, since a
// parse error quotes what it read. A missing file is left to the reader,
// which says so.
func localPath(arg, p string) error {
	if !filepath.IsLocal(p) {
		return cmdutil.Usagef("%s %q: give a relative path under the server's working directory", arg, p)
	}
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return fmt.Errorf("%s %q: the server's working directory: %w", arg, p, err)
	}
	target, err := filepath.EvalSymlinks(filepath.Join(wd, p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cmdutil.Usagef("%s %q: %v", arg, p, fsutil.Cause(err))
	}
	if rel, err := filepath.Rel(wd, target); err != nil || !filepath.IsLocal(rel) {
		return cmdutil.Usagef("%s %q is a symbolic link leading out of the server's working directory: give a file under it", arg, p)
	}
	return nil
}

func listLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultListLimit, nil
	case n < 0 || n > MaxListLimit:
		return 0, cmdutil.Usagef("limit %d: give 1 to %d", n, MaxListLimit)
	}
	return n, nil
}
