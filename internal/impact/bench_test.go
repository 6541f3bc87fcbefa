package impact_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/lever"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

// BenchmarkAssessARound is one command's round of N windows that force
// (apply, apply --dry-run): a new assessor and a new rate source each op,
// as a new process has, the N changes assessed one after another. It
// reports the rate source's requests (scrapes, or GetMetricData requests)
// and the seconds the round waits on the clock for its rates (the 5 s
// between two scrapes, on the injected clock): the command's wall clock
// beyond its own round trips.
func BenchmarkAssessARound(b *testing.B) {
	deps := []string{impact.ScreeningSim, impact.OpenAI, impact.CoreAPI, impact.Postgres, impact.SQS, impact.DynamoDB, impact.CognitoJWKS}
	for _, n := range []int{1, 3, 7} {
		forces := make([]lever.Forces, n)
		for i := range forces {
			forces[i] = lever.Forces{Dependencies: []string{deps[i]}, For: 30 * time.Minute}
		}
		b.Run(fmt.Sprintf("prometheus/windows=%d", n), func(b *testing.B) {
			fc := &fleetCounters{perScrape: 10}
			url := fc.serve(b)
			var waited time.Duration
			for b.Loop() {
				start := time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC)
				clk := clocktest.NewFake(start)
				src, err := metrics.NewPrometheusRates([]string{url}, metrics.PrometheusRateOptions{Clock: clk})
				if err != nil {
					b.Fatal(err)
				}
				a := &impact.Assessor{Clock: clk, Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
				assessRound(b, a, clk, forces)
				waited += clk.Now().Sub(start)
			}
			b.ReportMetric(float64(fc.scrapes.Load())/float64(b.N), "scrapes/op")
			b.ReportMetric(waited.Seconds()/float64(b.N), "waited-s/op")
		})
		b.Run(fmt.Sprintf("cloudwatch/windows=%d", n), func(b *testing.B) {
			cw := cwfake.New(b)
			for b.Loop() {
				clk := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 30, 0, time.UTC))
				src := metrics.NewCloudWatchRates(cw.Client(1), metrics.CloudWatchRateOptions{Region: "eu-west-1", Clock: clk})
				a := &impact.Assessor{Clock: clk, Open: func(context.Context) (impact.RateSource, error) { return src, nil }}
				assessRound(b, a, clk, forces)
			}
			b.ReportMetric(float64(cw.Calls())/float64(b.N), "requests/op")
		})
	}
}

// assessRound assesses forces one after another, every report with rates.
func assessRound(b *testing.B, a *impact.Assessor, clk *clocktest.Fake, forces []lever.Forces) {
	b.Helper()
	drive(b, clk, metrics.DefaultRateInterval, func() {
		for _, f := range forces {
			if r := a.Assess(b.Context(), f).(*impact.Report); r.Rates == nil || r.Rates.Error != "" {
				b.Errorf("%s: rates %+v", f.Dependencies[0], r.Rates)
			}
		}
	})
}
