package tui

import (
	"context"
	"errors"
	"fmt"
	"github.com/kosha-platform/koshactl/internal/lever"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/kosha-platform/koshactl/internal/approval"
	"github.com/kosha-platform/koshactl/internal/breaker"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/human"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/store"
	"github.com/kosha-platform/koshactl/internal/textsafe"
	"github.com/kosha-platform/koshactl/internal/tui/keys"
	"github.com/kosha-platform/koshactl/internal/tui/styles"
)

// mode is which view has the screen.
type mode int

const (
	modeTable mode = iota
	modeDetail
	modeHelp
	modeRequests
)

// source is the state of one data source.
type source struct {
	loading bool
	loaded  bool
	// at is when the last good data arrived; err is the last failure (nil
	// once a read succeeds again).
	at    time.Time
	errAt time.Time
	err   error
}

// rateState is the last read of the call rates: at is when it was asked
// for (a failed read waits RatesEvery too), rates the last good answer.
type rateState struct {
	loading bool
	at      time.Time
	rates   *metrics.CallRates
	err     error
}

// Model is the dashboard's root model.
type Model struct {
	deps   Deps
	opts   Options
	keys   keys.KeyMap
	styles styles.Styles
	help   help.Model
	// base returns the program's context; operations derive theirs from it.
	base func() context.Context
	// tick schedules a timer message on the options' clock ([tickOn]; tests
	// may replace it).
	tick func(time.Duration, func(time.Time) tea.Msg) tea.Cmd

	width, height int
	now           time.Time
	mode          mode
	refreshID     int
	quitting      bool

	store, gauges source
	overrides     []breaker.Override
	// policySince is when the table first had a change policy (zero:
	// none), for the UNAPPROVED mark.
	policySince time.Time
	// frozen is the fleet's freeze as last read (nil: none recorded).
	frozen *freeze.Freeze
	snap   *metrics.Snapshot
	// rows are the merged statuses, sorted; nextChange is when an override
	// becomes inactive, so the merge is redone then.
	rows       []row
	mergedAt   time.Time
	nextChange time.Time

	// rates are the fleet's last call rates, for the detail's impact.
	rates rateState

	table    tableState
	detail   detailPane
	requests requestsPane
	prompt   *prompt

	status      string
	statusIsErr bool
}

// New returns the dashboard model. It does no I/O until the program runs
// Init's commands.
func New(deps Deps, opts Options) Model {
	opts = opts.withDefaults()
	st := styles.New(opts.Color)
	h := help.New()
	h.Styles.ShortKey, h.Styles.ShortDesc = st.HelpKey, st.HelpDesc
	h.Styles.FullKey, h.Styles.FullDesc = st.HelpKey, st.HelpDesc
	h.Styles.ShortSeparator, h.Styles.FullSeparator, h.Styles.Ellipsis = st.HelpDesc, st.HelpDesc, st.HelpDesc
	m := Model{deps: deps, opts: opts, keys: keys.Default(), styles: st, help: h,
		base: context.Background, tick: tickOn(opts.Clock), width: 80, height: 24, now: opts.Clock.Now(), status: opts.Notice}
	m.table.filter = newInput("/ ", "name or state", 64, st)
	// Init starts both reads.
	m.store.loading, m.gauges.loading = true, true
	m.rebuild()
	return m
}

// WithContext returns m with operations bound to ctx (Run uses it).
func (m Model) WithContext(ctx context.Context) Model {
	m.base = func() context.Context { return ctx }
	return m
}

func newInput(prompt, placeholder string, limit int, st styles.Styles) textinput.Model {
	in := textinput.New()
	in.Prompt = prompt
	in.Placeholder = placeholder
	in.CharLimit = limit
	s := textinput.DefaultStyles(true)
	if !st.Color {
		state := textinput.StyleState{Text: lipgloss.NewStyle(), Placeholder: st.Dim, Suggestion: st.Dim, Prompt: st.Label}
		s.Focused, s.Blurred = state, state
		s.Cursor.Color = lipgloss.NoColor{}
	}
	s.Cursor.Blink = false // a blinking cursor is a timer; keep the UI idle
	in.SetStyles(s)
	return in
}

// Init starts the first reads, the refresh tick and the clock.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.loadOverrides(), m.loadGauges(), m.refreshTick(), m.clockTick())
}

// fetchDeps are the dependencies the gauge source is asked about: the
// context's and every one with an override.
func (m Model) fetchDeps() []string {
	var out []string
	add := func(d string) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	for _, d := range m.opts.Dependencies {
		add(d)
	}
	for _, o := range m.overrides {
		add(o.Dependency)
	}
	return out
}

// refresh starts the reads that are not already running.
func (m *Model) refresh() tea.Cmd {
	var cmds []tea.Cmd
	if !m.store.loading {
		m.store.loading = true
		cmds = append(cmds, m.loadOverrides())
	}
	if !m.gauges.loading {
		m.gauges.loading = true
		cmds = append(cmds, m.loadGauges())
	}
	if m.mode == modeDetail {
		cmds = append(cmds, m.loadAudit(m.detail.dependency))
		if m.ratesDue() {
			cmds = append(cmds, m.loadRates())
		}
	}
	if m.mode == modeRequests && !m.requests.loading {
		m.requests.loading = true
		cmds = append(cmds, m.loadRequests())
	}
	return tea.Batch(cmds...)
}

// Update handles one message, then hands the detail pane, when it is
// shown, its size and content as the message left them.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	next, cmd := m.update(msg)
	nm := next.(Model)
	nm.syncDetail()
	return nm, cmd
}

// syncDetail gives the detail pane the body's size and the lines of its
// dependency at the model's current state (rows, clock, width, audit
// records): whatever the message changed, the pane shows it, and its
// viewport keeps the offset within the new lines.
func (m *Model) syncDetail() {
	if m.mode != modeDetail {
		return
	}
	m.detail.setSize(m.width, m.bodyHeight())
	m.detail.setContent(m.detailContent())
}

func (m Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg.(type) {
	case clockTickMsg, overridesMsg, gaugesMsg, ratesMsg, forcedMsg, clearedMsg, requestsMsg, approvedMsg, deniedMsg, fleetMsg:
		// The clock, or a read or a change come back: the screen is of now.
		m.now = m.opts.Clock.Now()
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.table.clamp(m.tableHeight())
		return m, nil
	case clockTickMsg:
		if !m.nextChange.IsZero() && !m.now.Before(m.nextChange) {
			m.rebuild()
		}
		return m, m.clockTick()
	case refreshTickMsg:
		if msg.id != m.refreshID {
			return m, nil
		}
		cmd := m.refresh()
		return m, tea.Batch(cmd, m.refreshTick())
	case overridesMsg:
		m.store.loading = false
		if msg.err != nil {
			m.store.err, m.store.errAt = msg.err, m.now
			m.refreshed()
			return m, nil
		}
		m.store = source{loaded: true, at: m.now}
		m.overrides, m.policySince, m.frozen = msg.list.Overrides, msg.list.PolicySince, msg.list.Freeze
		m.rebuild()
		m.refreshed()
		return m, nil
	case gaugesMsg:
		m.gauges.loading = false
		if msg.err != nil {
			m.gauges.err, m.gauges.errAt = msg.err, m.now
			m.refreshed()
			return m, nil
		}
		m.gauges = source{loaded: true, at: m.now}
		snap := msg.snap
		m.snap = &snap
		m.rebuild()
		m.refreshed()
		return m, nil
	case ratesMsg:
		m.rates.loading, m.rates.at, m.rates.err = false, m.now, msg.err
		if msg.err == nil {
			rates := msg.rates
			m.rates.rates = &rates
		}
		return m, nil
	case auditMsg:
		if m.detail.dependency == msg.dependency {
			m.detail.loading = false
			m.detail.records, m.detail.err = msg.records, msg.err
		}
		return m, nil
	case forcedMsg:
		m.setResult(forceResult(msg, m.now))
		m.notePending(msg.rep)
		cmds := []tea.Cmd{m.refresh()}
		if res := forced(msg.rep); msg.err == nil && res.After.Dependency == msg.req.Dependency {
			m.showOverride(msg.req.Dependency, &res.After)
			if m.opts.WaitFleet {
				since := res.After.CreatedAt
				if since.IsZero() {
					since = m.now
				}
				cmds = append(cmds, m.waitFleet(metrics.Change{Dependency: msg.req.Dependency, Goal: metrics.GoalForced, Since: since}))
			}
		}
		return m, tea.Batch(cmds...)
	case clearedMsg:
		m.setResult(clearResult(msg))
		m.notePending(msg.rep)
		cmds := []tea.Cmd{m.refresh()}
		if msg.err == nil {
			m.showOverride(msg.dependency, nil)
			if m.opts.WaitFleet {
				cmds = append(cmds, m.waitFleet(metrics.Change{Dependency: msg.dependency, Goal: metrics.GoalReleased, Since: m.now}))
			}
		}
		return m, tea.Batch(cmds...)
	case requestsMsg:
		m.requests.loading = false
		m.requests.err = msg.err
		if msg.err == nil {
			m.requests.list, m.requests.more, m.requests.loaded = msg.list, msg.more, true
			m.requests.move(0, m.requestRows(m.bodyHeight()))
		}
		m.refreshed()
		return m, nil
	case approvedMsg:
		m.setResult(approvedResult(msg))
		m.requests.loading = false // the refresh below reads them again
		return m, m.refresh()
	case deniedMsg:
		m.setResult(deniedResult(msg))
		m.requests.loading = false
		return m, m.refresh()
	case fleetMsg:
		if text, isErr, ok := fleetResult(msg); ok {
			m.setResult(text, isErr)
		}
		return m, m.refresh()
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	}
	if m.prompt != nil {
		var cmd tea.Cmd
		m.prompt.input, cmd = m.prompt.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

// notePending adds the request a lever became (rep's pending request) to
// the pending requests already read, so the pane lists it before its next
// read.
func (m *Model) notePending(rep lever.Report) {
	if rep.Pending == nil || !m.requests.loaded {
		return
	}
	m.requests.list = append([]approval.Request{approval.PendingRequest(*rep.Pending, m.now)}, m.requests.list...)
}

// forced is the force a report made (zero when it made none).
func forced(rep lever.Report) breaker.ForceResult {
	if len(rep.Outcomes) == 0 {
		return breaker.ForceResult{}
	}
	return breaker.ForceResultOf(rep.Outcomes[0])
}

// confirmed reports whether the report's change was settled by a re-read.
func confirmed(rep lever.Report) bool { return len(rep.Outcomes) > 0 && rep.Outcomes[0].Confirmed }

// refreshed clears the "refreshing…" status once both reads are back.
func (m *Model) refreshed() {
	if m.status == statusRefreshing && !m.store.loading && !m.gauges.loading {
		m.status = ""
	}
}

const statusRefreshing = "refreshing…"

// setResult shows an action's outcome in the status line.
func (m *Model) setResult(text string, isErr bool) {
	m.status, m.statusIsErr = text, isErr
}

func (m Model) handleKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	if key.Matches(msg, k.Interrupt) {
		m.quitting = true
		return m, tea.Quit
	}
	if m.prompt != nil {
		return m.promptKey(msg)
	}
	if m.table.filtering {
		return m.filterKey(msg)
	}
	// The keys every view shares: quit; back to the table (the table's own
	// back clears its filter); help, which the help view closes; refresh.
	switch {
	case key.Matches(msg, k.Quit):
		m.quitting = true
		return m, tea.Quit
	case m.mode != modeTable && key.Matches(msg, k.Back), m.mode == modeHelp && key.Matches(msg, k.Help):
		m.mode = modeTable
		return m, nil
	case m.mode == modeHelp:
		return m, nil
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
		return m, nil
	case key.Matches(msg, k.Refresh):
		m.status, m.statusIsErr = statusRefreshing, false
		return m, m.refresh()
	}
	switch m.mode {
	case modeDetail:
		return m.detailKey(msg)
	case modeRequests:
		return m.requestsKey(msg)
	default:
		// The table's keys, below.
	}
	return m.tableKey(msg)
}

func (m Model) tableKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	page := max(m.tableHeight()-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		m.table.move(m.rows, -1, m.tableHeight())
	case key.Matches(msg, k.Down):
		m.table.move(m.rows, 1, m.tableHeight())
	case key.Matches(msg, k.PageUp):
		m.table.move(m.rows, -page, m.tableHeight())
	case key.Matches(msg, k.PageDown):
		m.table.move(m.rows, page, m.tableHeight())
	case key.Matches(msg, k.Top):
		m.table.move(m.rows, -len(m.rows), m.tableHeight())
	case key.Matches(msg, k.Bottom):
		m.table.move(m.rows, len(m.rows), m.tableHeight())
	case key.Matches(msg, k.Details):
		if r := m.selected(); r != nil {
			m.mode = modeDetail
			m.detail = newDetailPane(r.Dependency, m.deps.Audit != nil, m.keys)
			cmds := []tea.Cmd{m.loadAudit(r.Dependency)}
			if m.ratesDue() {
				cmds = append(cmds, m.loadRates())
			}
			if r.Gauges.Breakdown == metrics.BreakdownNotFetched && !m.gauges.loading {
				// The source read no instance series for it: ask now, not at
				// the next refresh.
				m.gauges.loading = true
				cmds = append(cmds, m.loadGauges())
			}
			return m, tea.Batch(cmds...)
		}
	case key.Matches(msg, k.Force):
		return m.openForce()
	case key.Matches(msg, k.Clear):
		return m.openClear()
	case key.Matches(msg, k.Requests):
		return m.openRequests()
	case key.Matches(msg, k.Filter):
		m.table.filtering = true
		return m, m.table.filter.Focus()
	case key.Matches(msg, k.Back):
		if m.table.filter.Value() != "" {
			m.table.filter.SetValue("")
			m.applyFilter()
		}
	}
	return m, nil
}

func (m Model) detailKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Requests):
		return m.openRequests()
	case key.Matches(msg, k.Force):
		return m.openForce()
	case key.Matches(msg, k.Clear):
		return m.openClear()
	}
	// Scrolling is the pane's.
	var cmd tea.Cmd
	m.detail, cmd = m.detail.update(msg)
	return m, cmd
}

func (m Model) filterKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.keys.Cancel):
		m.table.filter.SetValue("")
		m.table.filtering = false
		m.table.filter.Blur()
		m.applyFilter()
		return m, nil
	case key.Matches(msg, m.keys.Submit):
		m.table.filtering = false
		m.table.filter.Blur()
		return m, nil
	}
	var cmd tea.Cmd
	m.table.filter, cmd = m.table.filter.Update(msg)
	m.applyFilter()
	return m, cmd
}

// selected returns the row under the cursor in the table, or the detail's
// dependency in the detail view.
func (m *Model) selected() *row {
	name := m.table.selected
	if m.mode == modeDetail {
		name = m.detail.dependency
	}
	if i := slices.IndexFunc(m.rows, func(r row) bool { return r.Dependency == name }); i >= 0 {
		return &m.rows[i]
	}
	return nil
}

// showOverride puts what the operator just wrote (o, or nil for a clear) on
// screen at once, so the row never contradicts the status line while the
// refresh that confirms it is in flight.
func (m *Model) showOverride(dep string, o *breaker.Override) {
	m.overrides = slices.DeleteFunc(slices.Clone(m.overrides), func(cur breaker.Override) bool { return cur.Dependency == dep })
	if o != nil {
		m.overrides = append(m.overrides, *o)
	}
	m.rebuild()
}

// rebuild merges overrides and gauges into rows at m.now.
func (m *Model) rebuild() {
	statuses := metrics.Merge(m.opts.Dependencies, m.overrides, m.snap, m.now)
	start, period, n := m.windowGrid()
	m.rows = make([]row, 0, len(statuses))
	for _, st := range statuses {
		m.rows = append(m.rows, row{DependencyStatus: st, periods: periodStates(st.Timeline, start, period, n)})
	}
	m.mergedAt = m.now
	m.nextChange = time.Time{}
	for _, o := range m.overrides {
		if o.ActiveAt(m.now) && o.Expires() && (m.nextChange.IsZero() || o.ExpiresAt.Before(m.nextChange)) {
			m.nextChange = o.ExpiresAt
		}
	}
	m.applyFilter()
}

// windowGrid is the timeline's start, period and number of periods.
func (m *Model) windowGrid() (time.Time, time.Duration, int) {
	if m.snap != nil && m.snap.Period > 0 {
		return m.snap.Start, m.snap.Period, int(m.snap.End.Sub(m.snap.Start) / m.snap.Period)
	}
	start, end := metrics.Window(m.now, m.opts.window, metrics.DefaultPeriod)
	return start, metrics.DefaultPeriod, int(end.Sub(start) / metrics.DefaultPeriod)
}

// applyFilter recomputes the visible rows and keeps the selection.
func (m *Model) applyFilter() {
	q := strings.ToLower(strings.TrimSpace(m.table.filter.Value()))
	m.table.visible = make([]int, 0, len(m.rows))
	for i := range m.rows {
		r := &m.rows[i]
		if q == "" || strings.Contains(r.Dependency, q) || r.State.Label() == q || r.State.String() == q {
			m.table.visible = append(m.table.visible, i)
		}
	}
	m.table.reselect(m.rows, m.tableHeight())
}

// openForce opens the force-open prompt for the selected dependency.
func (m Model) openForce() (tea.Model, tea.Cmd) {
	r := m.selected()
	if r == nil {
		return m, nil
	}
	var current *breaker.Override
	if r.OverrideActive {
		o := *r.Override
		current = &o
	}
	p := newForcePrompt(r.Dependency, current, m.now, m.opts, m.styles)
	m.prompt = p
	return m, p.input.Focus()
}

// openClear opens the clear prompt, or says there is nothing to clear.
func (m Model) openClear() (tea.Model, tea.Cmd) {
	r := m.selected()
	if r == nil {
		return m, nil
	}
	if r.Override == nil {
		m.setResult(fmt.Sprintf("%s has no override to clear", r.Dependency), false)
		return m, nil
	}
	o := *r.Override
	p := newClearPrompt(r.Dependency, &o, m.now, m.opts, m.styles)
	m.prompt = p
	return m, p.input.Focus()
}

func (m Model) promptKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	p := m.prompt
	switch {
	case key.Matches(msg, m.keys.Cancel):
		m.prompt = nil
		m.setResult("canceled: nothing was changed", false)
		return m, nil
	case key.Matches(msg, m.keys.Submit):
		done, err := p.next()
		if err != "" {
			p.err = err
			return m, nil
		}
		if !done {
			return m, p.input.Focus()
		}
		m.prompt = nil
		switch p.kind {
		case promptApprove:
			m.setResult(fmt.Sprintf("approving request %s…", p.request.ID), false)
			return m, m.approve(*p.request)
		case promptDeny:
			m.setResult(fmt.Sprintf("denying request %s…", p.request.ID), false)
			return m, m.deny(*p.request, p.reason)
		case promptForce:
			req := ForceRequest{Dependency: p.dependency, Reason: p.reason, For: p.duration, Replace: p.current}
			m.setResult(fmt.Sprintf("forcing %s open…", p.dependency), false)
			return m, m.force(req)
		default:
			m.setResult(fmt.Sprintf("clearing %s…", p.dependency), false)
			return m, m.clear(p.dependency, p.reason)
		}
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	p.err = ""
	return m, cmd
}

func forceResult(msg forcedMsg, now time.Time) (string, bool) {
	dep := msg.req.Dependency
	var ce *breaker.ConflictError
	switch {
	case msg.rep.Pending != nil:
		return pendingResult(*msg.rep.Pending), false
	case msg.err == nil:
		res := forced(msg.rep)
		verb := "forced open"
		if res.Replaced {
			verb = "override replaced, forced open"
		}
		// The written lifetime (expires_at - created_at), not the time left
		// by the time the answer arrives: 1h reads 1h, not 59m.
		after := res.After
		lasts := "with no expiry"
		if after.Expires() {
			lasts = "for " + human.Age(after.ExpiresAt.Sub(after.CreatedAt))
		}
		return fmt.Sprintf("%s %s %s — reason: %s%s", dep, verb, lasts, msg.req.Reason, rereadNote(confirmed(msg.rep), store.ConfirmedNote)), false
	case errors.Is(msg.err, store.ErrOutcomeUnknown):
		return fmt.Sprintf("force-open %s: the outcome is unknown, look at the row once the store answers: %v", dep, msg.err), true
	case errors.As(msg.err, &ce):
		return fmt.Sprintf("not forced: %v (look again, then decide)", ce), true
	}
	return fmt.Sprintf("force-open %s failed, nothing was changed: %v", dep, msg.err), true
}

func clearResult(msg clearedMsg) (string, bool) {
	var ce *breaker.ConflictError
	var res breaker.ClearResult
	if len(msg.rep.Outcomes) > 0 {
		res = breaker.ClearResultOf(msg.rep.Outcomes[0])
	}
	switch {
	case msg.rep.Pending != nil:
		return pendingResult(*msg.rep.Pending), false
	case msg.err == nil && res.Before == nil:
		return fmt.Sprintf("%s was already clear", msg.dependency), false
	case msg.err == nil && !res.WasActive:
		return fmt.Sprintf("%s: removed an expired override%s", msg.dependency, rereadNote(confirmed(msg.rep), store.ConfirmedNote)), false
	case msg.err == nil:
		return fmt.Sprintf("%s cleared: instances follow their own breakers again within 5 s%s", msg.dependency,
			rereadNote(confirmed(msg.rep), store.ConfirmedNote)), false
	case errors.Is(msg.err, store.ErrOutcomeUnknown):
		return fmt.Sprintf("clear %s: the outcome is unknown, look at the row once the store answers: %v", msg.dependency, msg.err), true
	case errors.As(msg.err, &ce):
		return fmt.Sprintf("not cleared: %v", ce), true
	}
	return fmt.Sprintf("clear %s failed, nothing was changed: %v", msg.dependency, msg.err), true
}

// rereadNote is the sentence the CLI prints after a write whose answer was
// lost and which a re-read resolved (note), for the end of a status line;
// "" when the answer came.
func rereadNote(confirmed bool, note string) string {
	if !confirmed {
		return ""
	}
	return " (" + note + ")"
}

// fleetResult is the status line after a wait for the fleet; ok is false
// when the program is ending (nothing to say).
func fleetResult(msg fleetMsg) (text string, isErr, ok bool) {
	if len(msg.res.Convergences) == 0 || errors.Is(msg.err, context.Canceled) {
		return "", false, false
	}
	cv := msg.res.Convergences[0]
	if msg.err == nil {
		return fmt.Sprintf("%s: the fleet confirmed it, %s after %s", cv.Dependency, cv.Summary(), human.Duration(cv.Elapsed)), false, true
	}
	why := cv.Summary()
	if msg.res.FetchErr != nil {
		why += "; gauges: " + textsafe.OneLine(msg.res.FetchErr.Error())
	}
	return fmt.Sprintf("%s: the fleet did NOT confirm it within %s: %s", cv.Dependency, human.Duration(msg.res.Timeout), why), true, true
}
