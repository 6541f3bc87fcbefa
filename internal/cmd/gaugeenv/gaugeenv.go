// Package gaugeenv opens a resolved context's breaker_state gauge source:
// which source the context names (or a command's --metrics-url), described
// without I/O, and the source opened. It stands apart from cmdenv, which
// serves every command, so the commands that never read a gauge (the MCP
// server's shell among them) do not depend on the gauges' domain.
package gaugeenv

import (
	"context"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
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
