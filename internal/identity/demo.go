package identity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/audit"
	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/textsafe"
)

// DemoEnv names the environment variable that picks a demo identity on a
// local context: KOSHACTL_DEMO_USER=bob koshactl request approve ID.
const DemoEnv = "KOSHACTL_DEMO_USER"

// DemoAccount is the account every demo identity's ARN names: no AWS
// account's (AWS never issues it).
const DemoAccount = "000000000000"

// DemoUser is one of the demo identities every local context has.
type DemoUser struct {
	// Name is the user's name: the ARN's session name.
	Name string
	// Role is the IAM role name the ARN assumes, which a policy matches
	// with principal in Kosha::Role::"ROLE".
	Role string
	// About says what the user is for, for whoami and the docs.
	About string
}

// DemoUsers are the demo identities of every local context, in the order
// documented (docs/four-eyes-walkthrough.md). Their roles are the IAM
// roles of docs/iam.md, as a policy sees them; on the embedded store no
// IAM stands behind a role, so any of them can run any command.
var DemoUsers = []DemoUser{
	{Name: "alice", Role: "operator", About: "on call: pulls levers, and may break the glass where the policy lets the operator role"},
	{Name: "bob", Role: "approver", About: "approves, denies and acknowledges other people's changes"},
	{Name: "carol", Role: "approver", About: "a second approver, for a change that needs two"},
	{Name: "dana", Role: "admin", About: "sets the table's change policy"},
	{Name: "agent", Role: "requester", About: "an agent's MCP server: asks for changes, never approves them"},
}

// ErrUnknownDemoUser refuses a $KOSHACTL_DEMO_USER that names no demo
// identity (a usage error: nothing is written).
var ErrUnknownDemoUser = exitcode.New(exitcode.Usage, "no such demo identity")

// ErrDemoNotLocal refuses $KOSHACTL_DEMO_USER on a context that is not
// local: who acts there is what STS (or the environment) says.
var ErrDemoNotLocal = exitcode.New(exitcode.Usage, "demo identities exist only on a local context")

// ARN is the user's caller ARN, shaped as an assumed-role session's:
// arn:aws:sts::000000000000:assumed-role/ROLE/NAME.
func (u DemoUser) ARN() string {
	return "arn:aws:sts::" + DemoAccount + ":assumed-role/" + u.Role + "/" + u.Name
}

// UserID is the user's unique id, shaped as an assumed-role session's
// (ROLEID:SESSION, the role id starting AROA): the proofs the user writes
// are keyed by it, as a verified identity's are (internal/proof).
func (u DemoUser) UserID() string {
	return "AROADEMO" + strings.ToUpper(strings.ReplaceAll(u.Role, "-", "")) + ":" + u.Name
}

// Identity is the user as who is acting: verified by the local context
// ([audit.ActorDemo]).
func (u DemoUser) Identity() audit.Identity {
	return audit.Identity{Actor: u.ARN(), Source: audit.ActorDemo, UserID: u.UserID()}
}

// Notice is the line every command acting as u says once: who, and that
// it is a demonstration.
func (u DemoUser) Notice() string {
	return fmt.Sprintf("acting as demo identity %s (role %s) of the local context: a demonstration of four eyes, not a security boundary "+
		"(anyone who runs koshactl here may pick any demo identity with $%s)", u.Name, u.Role, DemoEnv)
}

// DemoOf is the demo user an identity is, when it is one.
func DemoOf(id audit.Identity) (DemoUser, bool) {
	if id.Source != audit.ActorDemo {
		return DemoUser{}, false
	}
	i := slices.IndexFunc(DemoUsers, func(u DemoUser) bool { return u.ARN() == id.Actor && u.UserID() == id.UserID })
	if i < 0 {
		return DemoUser{}, false
	}
	return DemoUsers[i], true
}

// Demo returns the demo user name names; an unknown name is an error
// matching [ErrUnknownDemoUser] that lists the known ones.
func Demo(name string) (DemoUser, error) {
	if i := slices.IndexFunc(DemoUsers, func(u DemoUser) bool { return u.Name == name }); i >= 0 {
		return DemoUsers[i], nil
	}
	known := make([]string, len(DemoUsers))
	for i, u := range DemoUsers {
		known[i] = u.Name + " (" + u.Role + ")"
	}
	return DemoUser{}, fmt.Errorf("%w: $%s names %s: use one of %s, or unset it to act as yourself (unverified)",
		ErrUnknownDemoUser, DemoEnv, textsafe.Quote(name), strings.Join(known, ", "))
}
