// Package notify tells an incident channel that a lever moved: the one rule
// of what a notification says (an [Event] and its renderings: the JSON of
// docs/contracts/notification.md, a Slack incoming-webhook message, an SNS
// message AWS Chatbot reads), the sinks that deliver it (a webhook, an SNS
// topic) and the [Dispatcher] that sends one event to every sink at once,
// within a bound, after the change and its audit record are written.
//
// A notification never blocks or fails the change it announces: delivery
// is bounded in time ([DefaultTimeout] unless the context sets its own), a
// sink that fails is reported in one line (through the dispatcher's Warn)
// and recorded in a notify.failed audit record that names the change's
// audit ids, and the caller's exit status does not depend on it.
//
// Text from operators and the table is hostile here: every value is
// rendered through internal/textsafe, and the chat forms escape &, < and >
// as Slack documents (so "<!channel>" or "<http://x|y>" in a reason stays
// text) and ask Slack not to parse names or links. A webhook's URL carries
// its token: only [RedactURL]'s scheme://host/… form is ever shown.
package notify
