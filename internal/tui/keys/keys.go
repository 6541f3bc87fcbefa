// Package keys provides the dashboard's key bindings, in one place, with the
// help text the help view renders from them.
package keys

import "charm.land/bubbles/v2/key"

// KeyMap holds every binding of the dashboard. It implements the help
// bubble's KeyMap.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding

	Force, Clear, Details, Back, Filter, Refresh, Help, Quit key.Binding

	// Requests shows the pending change requests; Approve and Deny act on
	// the one under the cursor there.
	Requests, Approve, Deny key.Binding

	// Submit and Cancel act in prompts and the filter.
	Submit, Cancel key.Binding
	// Interrupt quits from anywhere, prompts included.
	Interrupt key.Binding
}

// Default returns the dashboard's bindings.
func Default() KeyMap {
	return KeyMap{
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:    key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:  key.NewBinding(key.WithKeys("pgdown", "ctrl+f", "space"), key.WithHelp("pgdn", "page down")),
		Top:       key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "first")),
		Bottom:    key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "last")),
		Force:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "force-open")),
		Clear:     key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "clear")),
		Details:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Back:      key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Refresh:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		Requests:  key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pending requests")),
		Approve:   key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Deny:      key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "deny")),
		Submit:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "next/confirm")),
		Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Interrupt: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
	}
}

// ShortHelp is the footer of the table view.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Force, k.Clear, k.Details, k.Filter, k.Refresh, k.Help, k.Quit}
}

// FullHelp is the help view, one column per group.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Force, k.Clear, k.Details, k.Back},
		{k.Requests, k.Approve, k.Deny},
		{k.Filter, k.Refresh, k.Help, k.Quit, k.Interrupt},
	}
}

// DetailHelp is the footer of the detail view.
func (k KeyMap) DetailHelp() []key.Binding {
	return []key.Binding{k.Back, k.Force, k.Clear, k.Up, k.Down, k.Refresh, k.Quit}
}

// RequestsHelp is the footer of the pending requests.
func (k KeyMap) RequestsHelp() []key.Binding {
	return []key.Binding{k.Approve, k.Deny, k.Up, k.Down, k.Back, k.Refresh, k.Quit}
}

// PromptHelp is the footer while a prompt is open.
func (k KeyMap) PromptHelp() []key.Binding { return []key.Binding{k.Submit, k.Cancel} }
