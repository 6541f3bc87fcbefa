package request_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kosha-platform/koshactl/internal/exitcode"
	"github.com/kosha-platform/koshactl/internal/freeze"
	"github.com/kosha-platform/koshactl/internal/testutil/clitest"
)

type freezeStatus struct {
	Frozen bool         `json:"frozen"`
	Freeze *freeze.View `json:"freeze"`
}

// The fleet's freeze under docs/policies/four-eyes.cedar: setting it is
// never held (a safety lever fails toward safety), lifting it needs a
// second person; every step is audited, announced and listed by audit
// list.
func TestFreezeUnderFourEyesOnMoto(t *testing.T) {
	w := newWorld(t)
	w.as("admin", 0, "policy", "set", "../../../docs/policies/four-eyes.cedar", "--reason", "four eyes on production")

	w.as("alice", 0, "freeze", "--reason", "payments failing, is it us?", "--ref", "INC-1", "--for", "30m")
	st := clitest.Decode[freezeStatus](t, w.as("bob", 0, "freeze", "status", "-o", "json").Stdout)
	if !st.Frozen || st.Freeze.Actor != aliceARN || st.Freeze.Ref != "INC-1" {
		t.Fatalf("after alice's freeze: %+v", st)
	}

	// alice's lift waits for someone else: nothing lifted.
	req := clitest.Decode[requestResult](t, w.as("alice", exitcode.Pending, "freeze", "lift", "--reason", "not us", "-o", "json").Stdout)
	if st := clitest.Decode[freezeStatus](t, w.as("bob", 0, "freeze", "status", "-o", "json").Stdout); !st.Frozen {
		t.Fatalf("a lift waiting for its approval lifted the freeze: %+v", st)
	}
	// alice cannot approve her own; bob can, which lifts it.
	if r := w.as("alice", exitcode.Refused, "request", "approve", req.RequestID, "--sha256", req.SHA256); r.Stderr == "" {
		t.Error("alice approving her own lift: no error")
	}
	w.as("bob", 0, "request", "approve", req.RequestID, "--sha256", req.SHA256)
	st = clitest.Decode[freezeStatus](t, w.as("alice", 0, "freeze", "status", "-o", "json").Stdout)
	if st.Frozen || st.Freeze.State != freeze.StateLifted || st.Freeze.LiftReason != "not us" {
		t.Fatalf("after bob's approval: %+v", st)
	}

	// Every step recorded on the item's subject, and announced.
	var actions []string
	for _, rec := range w.audit("--subject", freeze.Key) {
		actions = append(actions, rec.Action)
		if rec.Action == freeze.ActionLift && (rec.Approval == nil || len(rec.Approval.Approvers) != 1 || rec.Approval.Approvers[0] != bobARN) {
			t.Errorf("the lift's record: approval %+v, want bob's", rec.Approval)
		}
	}
	slices.Sort(actions)
	if want := []string{freeze.ActionLift, freeze.ActionSet}; !slices.Equal(actions, want) {
		t.Errorf("records on %s: %v, want %v", freeze.Key, actions, want)
	}
	var announced []string
	for _, ev := range w.rcv.Events(t) {
		if strings.HasPrefix(ev.Action, "freeze.") || strings.HasPrefix(ev.Action, "request.") {
			announced = append(announced, ev.Action)
		}
	}
	for _, want := range []string{freeze.ActionSet, freeze.ActionLift} {
		if !slices.Contains(announced, want) {
			t.Errorf("announced %v: no %s", announced, want)
		}
	}
}
