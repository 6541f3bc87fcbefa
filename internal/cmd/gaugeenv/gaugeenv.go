// Package gaugeenv opens a resolved context's breaker_state gauge source:
// which source the context names (or a command's --metrics-url), described
// without I/O, and the source opened. It stands apart from cmdenv, which
// serves every command, so the commands that never read a gauge (the MCP
// server's shell among them) do not depend on the gauges' domain.
package gaugeenv

import (
	"context"
	"fmt"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/impact"
	"github.com/kosha-platform/koshactl/internal/metrics"
)

// Config is what env's gauge source is chosen and opened from;
// prometheusURL, when set, overrides the context's source (a --metrics-url
// flag).
func Config(env *cmdenv.Env, prometheusURL string) metrics.SourceConfig {
	var clk clock.Clock = clock.Real{}
	if env.Clock != nil {
		clk = env.Clock
	}
	return metrics.SourceConfig{Context: env.Context, AWSConfig: env.AWSConfig, PrometheusURL: prometheusURL, Clock: clk}
}

// Choice says which gauge source env names and describes it, without I/O
// ([metrics.ChooseSource]).
func Choice(env *cmdenv.Env, prometheusURL string) (metrics.Choice, error) {
	return metrics.ChooseSource(Config(env, prometheusURL))
}

// Source opens env's gauge source ([metrics.NewSource]); a command opens it
// once (a source keeps what it reported, such as a CloudWatch limit met).
// Its errors are the caller's to word: one wrapping
// [metrics.ErrInvalidSource] is a setting to fix.
func Source(ctx context.Context, env *cmdenv.Env, prometheusURL string) (*metrics.Source, error) {
	return metrics.NewSource(ctx, Config(env, prometheusURL))
}

// Assessor is env's lever impact assessor ([impact.Assessor]): the call
// rates of prometheusURL (a --metrics-url flag) or of the metrics source
// the context names (its metrics: setting); with neither, the matrix's
// impact alone. The source a context without a metrics setting falls back
// to for its gauges (the sandbox's endpoint, CloudWatch's default
// namespace) is not read: a lever never waits on a source nobody named.
//
// The source is opened once, on the first change assessed, and one read
// of it answers every change assessed about then ([impact.Assessor]): a
// command that assesses several changes (apply's windows) reads it once.
func Assessor(env *cmdenv.Env, prometheusURL string) *impact.Assessor {
	return assessor(env, prometheusURL, false)
}

// assessor is [Assessor]; with fallback, a context without a metrics
// setting reads the source its gauges fall back to, for a command that
// reads that source for its gauges anyway ([MeasureImpactAsGauges]).
func assessor(env *cmdenv.Env, prometheusURL string, fallback bool) *impact.Assessor {
	return &impact.Assessor{Clock: env.Clock, Dependencies: env.Context.KnownDependencies(), Open: func(ctx context.Context) (impact.RateSource, error) {
		if m := env.Context.Metrics; !fallback && prometheusURL == "" && m.CloudWatch == nil && m.Prometheus == nil {
			return nil, nil
		}
		sc := Config(env, prometheusURL)
		if ch, err := metrics.ChooseSource(sc); err == nil && ch.Kind != metrics.SourceCloudWatch {
			// A scrape's counters count calls in real time: the two
			// scrapes a rate is measured between are taken on the wall
			// clock, whatever clock the command's logic runs on.
			sc.Clock = clock.Real{}
		}
		src, err := metrics.NewRateSource(ctx, sc)
		if err != nil {
			return nil, err
		}
		return src, nil
	}}
}

// MeasureImpact makes prometheusURL (a command's --metrics-url; "" keeps
// the context's) the source of env's lever impact's call rates; a URL that
// cannot be scraped is refused (exit 2) before anything is read.
func MeasureImpact(env *cmdenv.Env, prometheusURL string) error {
	if prometheusURL == "" {
		return nil
	}
	if _, err := metrics.NewPrometheusRates([]string{prometheusURL}, metrics.PrometheusRateOptions{}); err != nil {
		return fmt.Errorf("--metrics-url: %w", err)
	}
	env.MeasureImpactWith(Assessor(env, prometheusURL))
	return nil
}

// MeasureImpactAsGauges makes the source env's gauges read (prometheusURL,
// a command's --metrics-url, or the context's metrics setting, or the
// source a context without one falls back to: the sandbox's endpoint on a
// local context, CloudWatch's default namespace on an AWS one) the source
// of env's lever impact's call rates, for a command that shows those
// gauges while it changes levers (the dashboard): a source it reads anyway
// is no source nobody named. A URL that cannot be scraped is refused
// (exit 2) before anything is read.
func MeasureImpactAsGauges(env *cmdenv.Env, prometheusURL string) error {
	if err := MeasureImpact(env, prometheusURL); err != nil || prometheusURL != "" {
		return err
	}
	env.MeasureImpactWith(assessor(env, "", true))
	return nil
}

// LiveRates is the rate source of env's lever impact ([impact.Assessor.Source])
// for a command that shows the call rates while it changes levers (the
// dashboard): what it shows and what its changes record come from one
// shared read. prometheusURL is the --metrics-url env's impact measures
// with ([MeasureImpact]). On a Prometheus source a read is started now
// ([impact.Assessor.Warm]), so the first change finds its two scrapes
// under way or recent; CloudWatch answers in one request and bills each,
// so it is read when asked. Nil when env's impact reads no rates.
func LiveRates(ctx context.Context, env *cmdenv.Env, prometheusURL string) (impact.RateSource, error) {
	a, ok := env.Impact.(*impact.Assessor)
	if !ok {
		return nil, nil
	}
	src, err := a.Source(ctx)
	if err != nil || src == nil {
		return nil, err
	}
	if ch, err := Choice(env, prometheusURL); err == nil && ch.Kind != metrics.SourceCloudWatch {
		a.Warm(ctx)
	}
	return src, nil
}
