package base

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/kosha-platform/koshactl/internal/awsconf"
	"github.com/kosha-platform/koshactl/internal/cmd/cmdenv"
	"github.com/kosha-platform/koshactl/internal/config"
	"github.com/kosha-platform/koshactl/internal/notify"
)

// notifier builds the context's notifier: one sink per notify entry, each
// built on first use (an SNS client, a webhook URL read from the
// environment), so a context without sinks costs nothing and a sink that
// cannot be built is a failed delivery, never a failed change.
func notifier(f *cmdenv.Factory, env *cmdenv.Env) *notify.Dispatcher {
	c := env.Context
	if len(c.Notify) == 0 {
		return nil
	}
	d := &notify.Dispatcher{Context: env.Name, Source: notify.SourceCLI, Timeout: c.NotifyTimeout.Std(), Clock: f.Clock,
		Audit: env.Audit(), Warn: func(line string) { fmt.Fprintln(f.IOStreams.ErrOut, line) }}
	if f.Debug {
		d.Debug = f.IOStreams.ErrOut
	}
	for i, s := range c.Notify {
		name := s.SinkName(i)
		switch {
		case s.Webhook != nil:
			d.Sinks = append(d.Sinks, webhookSink(name, s.Webhook, env.Environ.Get))
		case s.SNS != nil:
			d.Sinks = append(d.Sinks, snsSink(f, env, name, s.SNS.TopicARN))
		}
	}
	return d
}

// webhookSink resolves the URL (url, else $url-env). A missing or invalid
// variable is a sink whose every send fails saying so.
func webhookSink(name string, w *config.WebhookSink, getenv func(string) string) notify.Sink {
	u := w.URL
	if w.URLEnv != "" {
		u = getenv(w.URLEnv)
		if u == "" {
			return brokenSink{name: name, target: "webhook $" + w.URLEnv, err: fmt.Errorf("$%s is empty or unset: export the webhook URL in it", w.URLEnv)}
		}
		if err := config.ValidateWebhookURL(u); err != nil {
			return brokenSink{name: name, target: "webhook $" + w.URLEnv, err: fmt.Errorf("$%s %v", w.URLEnv, err)}
		}
	}
	format := notify.FormatJSON
	if w.Format == config.WebhookSlack {
		format = notify.FormatSlack
	}
	return &notify.Webhook{SinkName: name, URL: u, Format: format}
}

// snsSink publishes with a client built from the context's AWS settings
// (profile, credentials, endpoints.sns or endpoint-url) in the topic's
// region.
func snsSink(f *cmdenv.Factory, env *cmdenv.Env, name, topic string) notify.Sink {
	region := strings.Split(topic, ":")[3]
	var (
		mu     sync.Mutex
		client notify.Publisher
	)
	build := func(ctx context.Context) (notify.Publisher, error) {
		mu.Lock()
		defer mu.Unlock()
		if client != nil {
			return client, nil
		}
		var (
			cfg aws.Config
			err error
		)
		if env.Context.IsLocal() {
			// A local context's AWS settings come from the environment;
			// the region is the topic's.
			cfg, err = awsconf.Load(ctx, debugOptions(f, awsconf.Options{Region: region}))
		} else {
			cfg, err = env.AWSConfig(ctx)
		}
		if err != nil {
			return nil, err
		}
		client = sns.NewFromConfig(cfg, func(o *sns.Options) { o.Region = region },
			pinEndpoint[sns.Options](cfg, "SNS", func(o *sns.Options) **string { return &o.BaseEndpoint }))
		return client, nil
	}
	return &notify.SNS{SinkName: name, TopicARN: topic, Client: build}
}

// brokenSink is a sink that could not be built: every send fails with err.
type brokenSink struct {
	name, target string
	err          error
}

func (b brokenSink) Name() string                             { return b.name }
func (b brokenSink) Target() string                           { return b.target }
func (b brokenSink) Send(context.Context, notify.Event) error { return b.err }
