package runner

import (
	"encoding/xml"
	"testing"

	"github.com/kosha-platform/koshactl/internal/drill"
	"github.com/kosha-platform/koshactl/internal/drill/drilltest"
)

// checkJUnit writes a journal holding v everywhere a step's text goes as
// a JUnit report, and checks that the report is one suite with one case.
func checkJUnit(t *testing.T, v string) {
	j := &drill.Journal{Kind: "DrillRun", Drill: drill.DrillInfo{Name: "s"}, Outcome: drill.OutcomeFailed, Reason: v,
		Steps: []drill.StepRecord{{ID: "a", Kind: "http", Status: drill.StatusFailed, Detail: v, Error: v, Outputs: map[string]string{"body": v}}}}
	x, err := JUnit(j)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(x, &suites); err != nil || len(suites.Suites) != 1 || len(suites.Suites[0].Cases) != 1 {
		t.Fatalf("%q changed the JUnit report: %v\n%s", v, err, x)
	}
}

func TestJUnitKeepsHostileValuesAsData(t *testing.T) {
	for _, v := range drilltest.HostileValues {
		checkJUnit(t, v)
	}
}

// FuzzJUnit: any value in a step's detail, error and outputs and in the
// run's reason leaves the JUnit report's structure as it is.
func FuzzJUnit(f *testing.F) {
	for _, v := range drilltest.HostileValues {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { checkJUnit(t, v) })
}
