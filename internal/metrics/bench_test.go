package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/kosha-platform/koshactl/internal/clock/clocktest"
	"github.com/kosha-platform/koshactl/internal/metrics"
	"github.com/kosha-platform/koshactl/internal/metrics/cwfake"
)

// BenchmarkCloudWatchRefresh is one refresh of 100 dependencies x 8
// instances through the real SDK client (CBOR both ways) against the
// in-process CloudWatch; it reports GetMetricData calls per refresh
// (target: exactly 1).
func BenchmarkCloudWatchRefresh(b *testing.B) {
	for _, n := range []int{100, 125, 200} {
		b.Run(fmtInt(n)+"deps", func(b *testing.B) {
			s := cwfake.New(b)
			all := deps(n)
			for _, d := range all {
				fill(s, d, 8, func(inst, minute int) float64 { return float64((inst + minute) % 3) })
			}
			cw, err := metrics.NewCloudWatch(s.Client(1), metrics.CloudWatchOptions{Clock: clocktest.NewFake(now)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cw.Fetch(context.Background(), metrics.FetchRequest{Dependencies: all, Window: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Calls())/float64(b.N), "GetMetricData/refresh")
			b.ReportMetric(float64(len(s.Requests()[0].Queries)), "queries/request")
		})
	}
}

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
