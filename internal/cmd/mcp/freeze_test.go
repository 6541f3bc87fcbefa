package mcp_test

import (
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kosha-platform/koshactl/internal/freeze/freezetest"
)

// freeze_status reads the fleet's freeze as `freeze status -o json`; a
// proposal made while the fleet is frozen still makes its request, and
// its result says the fleet is frozen, naming the freeze.
func TestFreezeStatusAndProposalsWhileFrozen(t *testing.T) {
	t.Parallel()
	r := newRig(t, false)
	cs := r.connect(t)
	res, doc := call(t, cs, "freeze_status", map[string]any{})
	if res.IsError || doc["kind"] != "FreezeStatus" || doc["frozen"] != false || doc["freeze"] != nil {
		t.Fatalf("freeze_status with no freeze: %+v %v", res, doc)
	}
	freezetest.Set(t, r.st.s, r.env.Audit(), "alice@laptop", "payments failing", "INC-9", r.clk.Now(), time.Hour)
	_, doc = call(t, cs, "freeze_status", map[string]any{})
	if doc["frozen"] != true || doc["freeze"].(map[string]any)["ref"] != "INC-9" {
		t.Fatalf("freeze_status while frozen: %v", doc)
	}

	r.force(t, "openai", "provider incident")
	res, doc = call(t, cs, "propose_clear", map[string]any{"dependencies": []string{"openai"}, "reason": "agent: clear it"})
	if res.IsError {
		t.Fatalf("a proposal while frozen failed: %s %v", textOf(res), doc)
	}
	fz, _ := doc["fleet_frozen"].(map[string]any)
	if doc["kind"] != "ChangeRequestResult" || doc["request_id"] == "" || fz == nil || fz["ref"] != "INC-9" {
		t.Fatalf("proposal result while frozen: %v", doc)
	}
	if text := textOf(res); !strings.Contains(text, "frozen by alice@laptop (INC-9)") {
		t.Errorf("proposal summary does not say the fleet is frozen: %q", text)
	}
}

// textOf is a tool result's summary text.
func textOf(res *sdk.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}
