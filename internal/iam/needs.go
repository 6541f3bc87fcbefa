package iam

import (
	"fmt"
	"slices"
	"strings"
)

// IAM actions koshactl and the data plane use.
const (
	GetItem    = "dynamodb:GetItem"
	PutItem    = "dynamodb:PutItem"
	DeleteItem = "dynamodb:DeleteItem"
	Scan       = "dynamodb:Scan"
	// BatchGetItem reads many items by key (overrides and buckets before a
	// lever moves them, the known dependencies' overrides of a listing).
	BatchGetItem = "dynamodb:BatchGetItem"
	// Query reads the table's sparse indexes (audit by day, subject or
	// actor; the overrides index's keys).
	Query          = "dynamodb:Query"
	GetSecretValue = "secretsmanager:GetSecretValue"
	PutSecretValue = "secretsmanager:PutSecretValue"
	// UpdateSecretVersionStage moves AWSPENDING off a rotated version.
	UpdateSecretVersionStage = "secretsmanager:UpdateSecretVersionStage"
	GetMetricData            = "cloudwatch:GetMetricData"
	// DescribeAlarms reads the alarms of a drill's alarm stop conditions and
	// hypotheses. koshactl asks for metric and composite alarms, which AWS
	// answers only with the permission scoped to "*".
	DescribeAlarms = "cloudwatch:DescribeAlarms"
	// KMS actions Secrets Manager makes on the caller's behalf when the chaos
	// secret is encrypted with a customer-managed key: Decrypt to read a
	// value, GenerateDataKey to write one.
	KMSDecrypt         = "kms:Decrypt"
	KMSGenerateDataKey = "kms:GenerateDataKey"
	// SNSPublish announces a change on a context's SNS notification topics
	// (docs/notifications.md): every mutating command path, after its audit
	// record. Denied, the change still stands; the command warns.
	SNSPublish = "sns:Publish"
	// Table administration (store init, store migrate).
	DescribeTable      = "dynamodb:DescribeTable"
	CreateTable        = "dynamodb:CreateTable"
	UpdateTable        = "dynamodb:UpdateTable"
	DescribeTimeToLive = "dynamodb:DescribeTimeToLive"
	UpdateTimeToLive   = "dynamodb:UpdateTimeToLive"
	// ListTagsOfResource reads the table's tags: store migrate refuses to
	// add indexes to a table a CloudFormation stack manages.
	ListTagsOfResource = "dynamodb:ListTagsOfResource"
)

// Item key prefixes (docs/contracts): one kind of item each.
const (
	BreakerItems = "breaker#"
	BucketItems  = "rl#"
	AuditItems   = "audit#"
)

// Need is one permission a command path uses: an IAM action and, for a
// DynamoDB action, the item key prefix it reads or writes ("" for actions
// on no item).
type Need struct {
	Action string `json:"action"`
	Prefix string `json:"prefix,omitempty"`
}

// String renders the need as "dynamodb:GetItem breaker#".
func (n Need) String() string {
	if n.Prefix == "" {
		return n.Action
	}
	return n.Action + " " + n.Prefix
}

// Service is the action's service prefix ("dynamodb").
func (n Need) Service() string {
	s, _, _ := strings.Cut(n.Action, ":")
	return s
}

// keyed reports whether DynamoDB can limit the action with
// dynamodb:LeadingKeys to item prefixes: actions on items by their keys
// (a BatchGetItem names every key, each checked). Scan names no key, so
// the condition key is absent and cannot limit it; a Query names the
// partition key of the index it reads (a day, a subject, an actor), not an
// item's pk.
func (n Need) keyed() bool {
	switch n.Action {
	case GetItem, PutItem, DeleteItem, BatchGetItem:
		return true
	}
	return false
}

// AsGranted is the need as a policy grants it: without a prefix when the
// action cannot be limited to one (a scan reads the whole table).
func (n Need) AsGranted() Need {
	if !n.keyed() {
		n.Prefix = ""
	}
	return n
}

func needs(ns ...Need) []Need { return ns }

// The needs shared by several command paths.
var (
	auditWrite = Need{PutItem, AuditItems}
	// claimRead reads a clear's claim on the deleted item's write_id (audit
	// repair). A clear whose claim is refused needs no read on DynamoDB:
	// the refusal returns the stored claim (ReturnValuesOnConditionCheckFailure).
	claimRead    = Need{GetItem, AuditItems}
	breakerRead  = Need{GetItem, BreakerItems}
	breakerWrite = Need{PutItem, BreakerItems}
	breakerScan  = Need{Scan, BreakerItems}
	// batchRead reads many overrides (or buckets) by key, limited to their
	// prefix like GetItem.
	batchRead       = Need{BatchGetItem, BreakerItems}
	bucketBatchRead = Need{BatchGetItem, BucketItems}
	// indexRead names no item prefix: the policy grants it on the table's
	// indexes without dynamodb:LeadingKeys.
	indexRead   = Need{Action: Query}
	bucketRead  = Need{GetItem, BucketItems}
	bucketWrite = Need{PutItem, BucketItems}
	secretRead  = Need{Action: GetSecretValue}
	gauges      = Need{Action: GetMetricData}
	alarms      = Need{Action: DescribeAlarms}
	// notifyPublish is the notification of a change, on the context's SNS
	// topics.
	notifyPublish = Need{Action: SNSPublish}
)

// Commands is what each command path that talks to AWS calls, as the
// operations the SDK sends (checked by internal/cmd/iam's tests). Commands
// absent from it (config, version, drill validate, completion...) call no
// AWS API.
var Commands = map[string][]Need{
	"breaker list":        needs(indexRead, batchRead),
	"breaker list --scan": needs(breakerScan),
	"breaker get":         needs(breakerRead),
	"breaker status":      needs(indexRead, batchRead, gauges),
	"breaker force-open":  needs(batchRead, breakerWrite, auditWrite, notifyPublish),
	"breaker clear":       needs(batchRead, Need{DeleteItem, BreakerItems}, auditWrite, notifyPublish),
	"breaker clear --all": needs(breakerScan, batchRead, Need{DeleteItem, BreakerItems}, auditWrite, notifyPublish),
	"ratelimit get":       needs(bucketRead),
	"ratelimit list":      needs(Need{Scan, BucketItems}),
	"ratelimit reset":     needs(bucketBatchRead, bucketWrite, auditWrite, notifyPublish),
	"ratelimit drain":     needs(bucketBatchRead, bucketWrite, auditWrite, notifyPublish),
	"ratelimit set":       needs(bucketBatchRead, bucketWrite, auditWrite, notifyPublish),
	"audit list":          needs(indexRead),
	"audit list --scan":   needs(Need{Scan, AuditItems}),
	// The repair reads the clear's claim or the override, and writes the
	// record (re-reading it when the put's answer is lost).
	"audit repair":     needs(claimRead, breakerRead, auditWrite),
	"chaos sign":       needs(secretRead, auditWrite),
	"chaos verify":     needs(secretRead),
	"chaos key id":     needs(secretRead),
	"chaos key rotate": needs(secretRead, Need{Action: PutSecretValue}, Need{Action: UpdateSecretVersionStage}, auditWrite, notifyPublish),
	// A drill's levers (the example drills and one reading CloudWatch
	// gauges): force and clear overrides, drain and restore buckets, mint
	// chaos headers, wait on the gauges and watch the alarms of its stop
	// conditions, audit every change, announce the run.
	"drill run": needs(breakerRead, batchRead, breakerWrite, Need{DeleteItem, BreakerItems},
		bucketRead, bucketWrite, secretRead, gauges, alarms, auditWrite, notifyPublish),
	// drill recover finishes a dead run's rollbacks from the audit trail:
	// the run's records on each lever (the audit index by subject, filtered
	// by run_id), then the override or bucket as the rollback finds it, the
	// override's clear, the recovery's audit records, and its notification.
	// (Putting a bucket back writes rl# as drill run's rollback does.)
	"drill recover": needs(indexRead, breakerRead, bucketRead, Need{DeleteItem, BreakerItems}, auditWrite, notifyPublish),
	// The reference data plane (koshactl sandbox): it reads overrides and
	// chaos keys, takes tokens with a conditional write, and audits chaos
	// headers it applied or refused.
	"sandbox": needs(breakerRead, bucketRead, bucketWrite, secretRead, auditWrite),
	// Table administration: create the table (and TTL) where it is missing;
	// add the indexes an older table lacks (unless its tags say a
	// CloudFormation stack manages it), then index the existing audit
	// records and overrides with conditional writes.
	"store init": needs(Need{Action: DescribeTable}, Need{Action: CreateTable}, Need{Action: DescribeTimeToLive},
		Need{Action: UpdateTimeToLive}),
	"store migrate": needs(Need{Action: DescribeTable}, Need{Action: ListTagsOfResource}, Need{Action: UpdateTable},
		Need{Scan, AuditItems}, Need{Scan, BreakerItems}, auditWrite, breakerWrite),
}

// Role names a set of command paths given one policy.
type Role string

// The roles.
const (
	// Reader sees overrides, buckets, gauges and the audit log; it changes
	// nothing and never reads the chaos key.
	Reader Role = "reader"
	// Operator is the on-call operator: everything a reader does, plus
	// forcing and clearing overrides, bucket levers and chaos headers and
	// keys.
	Operator Role = "operator"
	// DrillRunner is a CI job running drills.
	DrillRunner Role = "drill-runner"
	// DataPlane is the gateway and core-api at run time.
	DataPlane Role = "data-plane"
	// Admin creates and migrates the table (store init, store migrate): the
	// infrastructure pipeline's or a platform engineer's, never on-call's.
	Admin Role = "admin"
)

// Roles lists every role, in the order documented.
var Roles = []Role{Reader, Operator, DrillRunner, DataPlane, Admin}

var readerPaths = []string{"breaker list", "breaker list --scan", "breaker get", "breaker status", "ratelimit get", "ratelimit list",
	"audit list", "audit list --scan"}

// RolePaths is the command paths each role is for.
var RolePaths = map[Role][]string{
	Reader: readerPaths,
	Operator: append(slices.Clone(readerPaths), "breaker force-open", "breaker clear", "breaker clear --all",
		"ratelimit reset", "ratelimit drain", "ratelimit set", "chaos sign", "chaos verify", "chaos key id", "chaos key rotate",
		"audit repair"),
	DrillRunner: {"drill run", "drill recover"},
	DataPlane:   {"sandbox"},
	Admin:       {"store init", "store migrate"},
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: use one of %s", s, strings.Join(names, ", "))
}

// Needs returns the union of the needs of the role's command paths, sorted
// and without repeats.
func (r Role) Needs() []Need {
	var out []Need
	for _, p := range RolePaths[r] {
		for _, n := range Commands[p] {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.SortFunc(out, func(a, b Need) int { return strings.Compare(a.String(), b.String()) })
	return out
}
