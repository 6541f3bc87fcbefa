package iam

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// IAM actions koshactl and the data plane use.
const (
	GetItem    = "dynamodb:GetItem"
	PutItem    = "dynamodb:PutItem"
	DeleteItem = "dynamodb:DeleteItem"
	// ConditionCheckItem is what AWS authorizes a ConditionCheck of a
	// transaction as: an approval checks the proofs it counts and the
	// request's closed marker in its own transaction.
	ConditionCheckItem = "dynamodb:ConditionCheckItem"
	Scan               = "dynamodb:Scan"
	// BatchGetItem reads many items by key (overrides and buckets before a
	// lever moves them, the known dependencies' overrides of a listing).
	BatchGetItem = "dynamodb:BatchGetItem"
	// Query reads the table's sparse indexes (the lists index's audit
	// records and overrides; audit by day, subject or actor; the overrides
	// index's keys).
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
	// AuditItems are the operator audit records, written with the lever
	// they record. Its pattern (audit#*) also covers DataPlaneItems.
	AuditItems = "audit#"
	// DataPlaneItems are the data plane's records (audit.DataPlanePrefix):
	// the only audit keys its role writes, trusted by no lever decision.
	DataPlaneItems = "audit#dp#"
	// AskingItems are the records of asking (audit.RequestPrefix): a
	// request made or canceled. The requester role writes these and no
	// other audit key, so it cannot write an approver's record, which is
	// what proves an approved request.
	AskingItems = "audit#rq#"
	// PolicyItems is the table's change policy (policy#table): every lever
	// command and audit list read it; only the admin role writes it.
	PolicyItems = "policy#"
	// RequestItems are the change requests (approval.RequestPrefix): asked
	// for by a lever command the policy does not allow at once, decided
	// by an approver.
	RequestItems = "request#"
	// ReviewItems are the break-glass reviews (approval.ReviewPrefix),
	// opened with a break-glass change, acknowledged by someone else.
	ReviewItems = "review#"
	// FreezeItems is the fleet's freeze (freeze#fleet): the data plane
	// reads it with its overrides, chaos sign and verify read it, and so
	// do drills, apply and the status views; the freeze lever writes it.
	FreezeItems = "freeze#"
	// ProofItems are the proofs (internal/proof): read by every role that
	// decides from them, each written by its writer alone under its own
	// unique id ([OwnProofs]).
	ProofItems = "proof#"
	// ClosedItems are the requests' closed markers (approval.ClosedPrefix):
	// written by the change that applies, denies, cancels or expires a
	// request, never deleted; an approval checks the marker is absent.
	// They are written with [ClosedAttributes] alone: a marker with a ttl
	// (or any attribute a table's TTL may be on) would be deleted by
	// DynamoDB's TTL, and its denied request revived.
	ClosedItems = "closed#"
	// ProposalItems are a proposer's own bookkeeping
	// (approval.ProposalsPrefix): its budget and its pending proposals,
	// read in the proposal's batch read, each written by its proposer
	// alone under its own unique id ([OwnProposals]).
	ProposalItems = "proposals#"
)

// ClosedAttributes are the only attributes a closed marker is written
// with, or checked on (dynamodb:Attributes): its key, the verb that closed
// it and its change's token (approval's closed marker; its tests hold
// them to it).
var ClosedAttributes = []string{"pk", "verb", "write_id"}

// AttributesCondition is the condition operator limiting the attributes a
// write may name (dynamodb:Attributes: the item's, and those its
// condition names): every one must be of the list.
const AttributesCondition = "ForAllValues:StringEquals"

// The policy variables of the proof grants: IAM replaces them with the
// caller's unique id and principal ARN when it evaluates the policy.
const (
	UserIDVariable       = "${aws:userid}"
	PrincipalARNVariable = "${aws:PrincipalArn}"
)

// OwnProofs starts the keys a principal may write its proofs under: its
// own unique id ("proof#${aws:userid}#"), then the verb a role's grant
// names. Its grants' patterns go on with the writer's ARN, which IAM ties
// to the caller: ${aws:PrincipalArn} for an IAM user (its own ARN), and an
// assumed role's session ARN, whose session name is the end of its unique
// id (internal/proof.Bound).
const OwnProofs = ProofItems + UserIDVariable + "#"

// The verbs of proofs (internal/proof's; TestProofVerbsAreTheProofPackages).
const (
	VerbAsk     = "ask"
	VerbApprove = "approve"
	VerbDeny    = "deny"
	VerbCancel  = "cancel"
	VerbExpire  = "expire"
	VerbGlass   = "glass"
	VerbAck     = "ack"
	VerbSet     = "set"
)

// OwnProposals starts the keys a principal may write its proposals'
// budget and pending items under: its own unique id, so no identity
// spends or coalesces into another's.
const OwnProposals = ProposalItems + UserIDVariable + "#"

// OwnProofPatterns are the dynamodb:LeadingKeys patterns that let the
// caller write its own proofs of verb: one for an IAM user, one for an
// assumed-role session.
func OwnProofPatterns(verb string) []string {
	return []string{OwnProofs + verb + "#" + PrincipalARNVariable + "#*", OwnProofs + verb + "#arn:*:sts::*:assumed-role/*"}
}

// TransactWriteItems is the operation a transaction's item writes are
// enclosed in: dynamodb:EnclosingOperation holds it for each of them, and
// is absent for a PutItem or DeleteItem sent on its own.
const TransactWriteItems = "TransactWriteItems"

// Need is one permission a command path uses: an IAM action and, for a
// DynamoDB action, the item key prefix it reads or writes ("" for actions
// on no item). Transaction is true for an item write sent as an action of a
// TransactWriteItems call (every lever change and audit record: store.Apply):
// the policy then grants the action only there.
type Need struct {
	Action      string `json:"action"`
	Prefix      string `json:"prefix,omitempty"`
	Transaction bool   `json:"transaction,omitempty"`
}

// String renders the need as "dynamodb:GetItem breaker#", and a write in a
// transaction as "dynamodb:PutItem audit# (in TransactWriteItems)".
func (n Need) String() string {
	s := n.Action
	if n.Prefix != "" {
		s += " " + n.Prefix
	}
	if n.Transaction {
		s += " (in " + TransactWriteItems + ")"
	}
	return s
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
	case GetItem, PutItem, DeleteItem, BatchGetItem, ConditionCheckItem:
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
	// record writes an operator audit record, in the transaction of the
	// change it records (or alone, as a transaction of one write:
	// audit.Log.Append).
	record = Need{PutItem, AuditItems, true}
	// recordProof reads a change's first record, its proof, when the store
	// did not answer the change at all (store.Apply): written in the
	// change's transaction under a key its token names and never updated,
	// it says whether the change landed whoever moved the lever since. A
	// refusal needs no read: it returns the refused items as stored
	// (ALL_OLD).
	recordProof = Need{GetItem, AuditItems, false}
	// askProof is the proof read of a change that asks (a request made or
	// canceled), its record of asking: the requester's role reads no other
	// audit key.
	askProof = Need{GetItem, AskingItems, false}
	// breakerRead reads an override.
	breakerRead   = Need{GetItem, BreakerItems, false}
	breakerPut    = Need{PutItem, BreakerItems, true}
	breakerDelete = Need{DeleteItem, BreakerItems, true}
	breakerScan   = Need{Scan, BreakerItems, false}
	// batchRead reads many overrides (or buckets) by key, limited to their
	// prefix like GetItem.
	batchRead       = Need{BatchGetItem, BreakerItems, false}
	bucketBatchRead = Need{BatchGetItem, BucketItems, false}
	// indexRead names no item prefix: the policy grants it on the table's
	// indexes without dynamodb:LeadingKeys.
	indexRead = Need{Action: Query}
	// bucketRead reads a bucket.
	bucketRead = Need{GetItem, BucketItems, false}
	bucketScan = Need{Action: Scan, Prefix: BucketItems}
	bucketPut  = Need{PutItem, BucketItems, true}
	secretRead = Need{Action: GetSecretValue}
	gauges     = Need{Action: GetMetricData}
	alarms     = Need{Action: DescribeAlarms}
	// notifyPublish is the notification of a change, on the context's SNS
	// topics.
	notifyPublish = Need{Action: SNSPublish}
	// policyRead reads the table's change policy before a lever moves (and
	// to flag unapproved changes in audit list, and before policy set).
	policyRead = Need{GetItem, PolicyItems, false}
	// policyBatchRead reads the policy in the levers' own batch read
	// (force-open, clear: one round trip for both).
	policyBatchRead = Need{BatchGetItem, PolicyItems, false}
	// policyCheck checks, in a lever's transaction, that the table has no
	// policy: a force with nothing in force reads nothing (its one
	// transaction checks the override and the policy absent), and clear
	// --all, which read the policy beside its scan, checks it is still
	// absent.
	policyCheck = Need{ConditionCheckItem, PolicyItems, true}
	// policyPut writes the table's change policy: the admin role's alone.
	policyPut = Need{PutItem, PolicyItems, true}
	// Asking: a change the table's policy does not allow at once becomes a
	// change request, written with its record of asking in one
	// transaction; a lost answer is settled by reading the record of asking
	// (askProof).
	requestPut       = Need{PutItem, RequestItems, true}
	askRecord        = Need{PutItem, AskingItems, true}
	requestRead      = Need{GetItem, RequestItems, false}
	requestBatchRead = Need{BatchGetItem, RequestItems, false}
	requestScan      = Need{Action: Scan, Prefix: RequestItems}
	// A break-glass change opens its review in the change's own
	// transaction (its first record is still its proof).
	reviewPut  = Need{PutItem, ReviewItems, true}
	reviewRead = Need{GetItem, ReviewItems, false}
	reviewScan = Need{Action: Scan, Prefix: ReviewItems}
	// reviewBatchRead reads the open reviews the lists index listed again
	// by key, with their proofs.
	reviewBatchRead = Need{BatchGetItem, ReviewItems, false}
	// freezeRead reads the fleet's freeze: chaos sign mints nothing while
	// it holds, chaos verify explains it.
	freezeRead = Need{GetItem, FreezeItems, false}
	// freezeBatchRead reads it in the data plane's override reads (one
	// BatchGetItem of breaker#<dependency> and freeze#fleet).
	freezeBatchRead = Need{BatchGetItem, FreezeItems, false}
	// freezePut writes it: the freeze lever's set and lift (never a
	// delete: a lifted freeze stays as the record that voids the headers
	// minted before it).
	freezePut = Need{PutItem, FreezeItems, true}
	// Proofs: read by key in batches (a request's or review's, with the
	// closed marker and the policy's proof), scanned by listings, checked
	// in an approval's transaction; each written in the transaction of
	// what it proves, by its writer alone.
	proofBatchRead = Need{BatchGetItem, ProofItems, false}
	proofRead      = Need{GetItem, ProofItems, false}
	proofScan      = Need{Action: Scan, Prefix: ProofItems}
	proofCheck     = Need{ConditionCheckItem, ProofItems, true}
	// A request's closed marker: read with it, put by what closes it,
	// checked absent by an approval that does not.
	closedBatchRead = Need{BatchGetItem, ClosedItems, false}
	closedPut       = Need{PutItem, ClosedItems, true}
	closedCheck     = Need{ConditionCheckItem, ClosedItems, true}
	// A proposal reads its proposer's budget and pending item with the
	// table's policy (one batch), and writes them, conditional on the
	// items as read, in its request's transaction.
	proposalsBatchRead = Need{BatchGetItem, ProposalItems, false}
	ownProposals       = Need{PutItem, OwnProposals, true}
)

// ownProof is the write, in a change's transaction, of the caller's own
// proof of verb.
func ownProof(verb string) Need { return Need{PutItem, OwnProofs + verb + "#", true} }

// withAsking is a lever command's needs plus what it writes when the
// table's policy does not let it act at once: a change request (asking),
// or with --break-glass the change and its review.
func withAsking(ns ...Need) []Need {
	return append(ns, requestPut, askRecord, askProof, ownProof(VerbAsk), reviewPut, ownProof(VerbGlass))
}

// Commands is what each command path that talks to AWS calls, as the
// operations the SDK sends (checked by internal/cmd/iam's tests). Commands
// absent from it (config, version, drill validate, completion...) call no
// AWS API. It is built on first use: every koshactl process would pay at
// initialisation for a table only iam policy and the tests read.
var Commands = sync.OnceValue(func() map[string][]Need {
	return map[string][]Need{
		"breaker list":        needs(indexRead, batchRead),
		"breaker list --scan": needs(breakerScan),
		"breaker get":         needs(breakerRead),
		"breaker status":      needs(indexRead, batchRead, gauges, freezeBatchRead),
		// A lever change is one transaction: the override's write and its
		// record. A lost answer is settled by one read of the change's proof,
		// its first record.
		// Each asks the table's change policy, read in the same batch as the
		// overrides (clear --all: one GetItem beside its scan), or, for a
		// force with nothing in force, checked absent by its transaction
		// (policyCheck), and asks for approval or breaks the glass where the
		// policy says (withAsking). On a context that names CloudWatch,
		// forces and clears read the call rates their impact and records
		// carry (the gauges' GetMetricData; a denied read leaves the
		// matrix's impact and never stops the lever).
		"breaker force-open": withAsking(policyBatchRead, batchRead, breakerPut, record, recordProof, policyCheck, notifyPublish, gauges),
		"breaker clear":      withAsking(policyBatchRead, batchRead, breakerDelete, record, recordProof, notifyPublish, gauges),
		// (clear --all checks the policy still absent when it read none: the
		// operator's force-open grants that check.)
		"breaker clear --all": withAsking(policyRead, breakerScan, breakerDelete, record, recordProof, notifyPublish, gauges),
		// Levers as code: diff reads the overrides as breaker status does;
		// apply reads them with the fleet's freeze, the table's policy and
		// the windows' requests in one batch read, and writes the windows'
		// forces and clears as one transaction, settled like force-open's
		// and clear's.
		"diff": needs(freezeBatchRead, indexRead, batchRead, gauges),
		// A window's approved request is proven by its proofs and closed
		// marker (and the policy by its own), read in one batch; an override
		// is the file's only when apply's own record of its write says so
		// (the audit index by subject). It reads the fleet's freeze first:
		// while it holds, no window opens.
		"apply": needs(freezeBatchRead, indexRead, batchRead, policyBatchRead, requestBatchRead, proofBatchRead, closedBatchRead, breakerPut, breakerDelete,
			record, recordProof, notifyPublish, gauges),
		// apply --request asks for the windows the policy does not allow at
		// once: it reads the policy and the windows' requests, and writes the
		// missing requests with their records of asking; no lever.
		"apply --request": needs(policyRead, policyBatchRead, requestBatchRead, requestPut, askRecord, askProof, ownProof(VerbAsk), notifyPublish),
		// koshactl mcp: the read tools read as their commands do; a proposal
		// reads the levers, then the policy with the proposer's budget and
		// pending item (one batch; an identical pending proposal is read
		// with its proofs and closed marker, and returned), then writes the
		// change request with its record of asking, its proof of asking and
		// the proposer's two items (one transaction; a lost answer settled
		// by reading the record of asking; the proposer's pending item names
		// a request, read to see if it still waits). No lever and no approver's record is
		// written.
		"mcp": needs(indexRead, batchRead, gauges, freezeRead, freezeBatchRead, breakerRead, policyRead, bucketRead, bucketScan,
			requestBatchRead, reviewBatchRead, proofBatchRead, closedBatchRead, bucketBatchRead,
			requestPut, requestRead, askProof, askRecord, ownProof(VerbAsk), notifyPublish, policyBatchRead, proposalsBatchRead, ownProposals),
		// koshactl mcp on a context marked mcp: {read-only: true}: its read
		// tools alone (no proposal tool is offered), read as their commands
		// read; what the reader's role runs it with.
		"mcp --read-only": needs(indexRead, batchRead, gauges, freezeRead, freezeBatchRead, breakerRead, policyRead, bucketRead, bucketScan,
			requestBatchRead, reviewBatchRead, proofBatchRead, closedBatchRead),
		// The dashboard's refresh: the overrides index's keys (overrides of
		// dependencies the context does not know), the known dependencies'
		// overrides with the table's policy item and the fleet's freeze
		// (one batch read: the policy's since flags what bypassed it, the
		// freeze is the banner) and the gauges, as breaker status reads
		// them. Its levers are breaker force-open's and clear's, its
		// requests pane request list's, its detail audit list's.
		"dashboard": needs(indexRead, batchRead, policyBatchRead, freezeBatchRead, gauges),
		// Change requests (docs/contracts/policy.md). Listing the open ones
		// queries the lists index, then reads them again by key with their
		// proofs and closed markers, a page at a time; --all queries the
		// closed requests' partition beside the open one, and reads the same;
		// showing reads one request. (Both mark a request found past its
		// expiry expired where the caller may write it; a reader's warns and
		// leaves that to the next approval, which marks it.)
		"request list":       needs(indexRead, requestBatchRead, reviewBatchRead, proofBatchRead, closedBatchRead),
		"request list --all": needs(indexRead, requestBatchRead, proofBatchRead, closedBatchRead),
		// Waiting on me: the policy item too, asked whether it would take the
		// caller's approval; the requests alone are listed (a page at a
		// time), so no review is read.
		"request list --waiting-on-me": needs(indexRead, requestBatchRead, proofBatchRead, closedBatchRead, policyRead),
		"request show":                 needs(requestRead, proofBatchRead, closedBatchRead),
		// Approving reads the request and the policy in one batch read (and a
		// bucket change's buckets), then writes the change, the approver's
		// record and the request's status in one transaction, settled by
		// reading its first record when its answer is lost.
		// The approver's proof goes with it, and the closed marker (put by
		// the approval that completes the approvals, else checked absent);
		// the proofs it counts and the policy's proof are checked in the same
		// transaction. An approval that finds the request expired marks it
		// so: the approver's proof of the expiry, and the closed marker.
		"request approve": needs(requestBatchRead, closedBatchRead, policyBatchRead, bucketBatchRead, freezeBatchRead, breakerPut, breakerDelete, bucketPut, freezePut, record,
			requestPut, recordProof, ownProof(VerbApprove), ownProof(VerbExpire), closedPut, closedCheck, proofCheck, notifyPublish, gauges),
		// Denying is an approver's record; canceling the requester's record of
		// asking. Each reads the request with its closed marker, and writes
		// the decider's proof and the marker.
		"request deny":   needs(requestBatchRead, closedBatchRead, recordProof, requestPut, record, ownProof(VerbDeny), closedPut, notifyPublish),
		"request cancel": needs(requestBatchRead, closedBatchRead, askProof, requestPut, askRecord, ownProof(VerbCancel), closedPut, notifyPublish),
		// Acknowledging a break-glass review: the review, its proofs (who
		// broke the glass), the acknowledger's proof and its record. A
		// review naming no proof of who broke its glass is looked up in a
		// scan of the proofs (made before proofs, or dropped from its item).
		"request ack": needs(reviewRead, proofBatchRead, proofScan, reviewPut, ownProof(VerbAck), record, recordProof),
		// drill request asks for a drill file's levers on a table whose policy
		// does not allow them at once.
		"drill request":  needs(policyBatchRead, requestPut, askRecord, askProof, ownProof(VerbAsk), notifyPublish),
		"ratelimit get":  needs(bucketRead),
		"ratelimit list": needs(bucketScan),
		// The bucket levers ask the table's policy too, read in the same batch
		// as the buckets. A change of a client without a bucket (a drain or
		// set without --create; a reset when a client is near) is refused,
		// with the near client a scan of the buckets finds. A drain or set
		// with --create of a client without a bucket creates it at the floor:
		// its transaction checks the policy absent.
		"ratelimit reset":   withAsking(policyBatchRead, bucketBatchRead, bucketPut, record, recordProof, notifyPublish, bucketScan),
		"ratelimit drain":   withAsking(policyBatchRead, bucketBatchRead, bucketPut, record, recordProof, notifyPublish, bucketScan, policyCheck),
		"ratelimit set":     withAsking(policyBatchRead, bucketBatchRead, bucketPut, record, recordProof, notifyPublish, bucketScan, policyCheck),
		"audit list":        needs(indexRead, policyRead),
		"audit list --scan": needs(Need{Action: Scan, Prefix: AuditItems}, policyRead),
		// A scheduled detection job: the lever changes recorded since the
		// table's policy without an approval (the policy read first, then the
		// records since it), each announced on the context's topics. A
		// notification a sink refuses is recorded (notify.failed), which the
		// operator role's lever paths grant already.
		// It reads every policy.set proof too: the policy item must be what
		// the newest of them names.
		"audit list --unapproved --notify": needs(indexRead, policyRead, proofScan, notifyPublish),
		// A record of its own (a minted header, a rotated key) is a
		// transaction of one write, its lost answer settled by reading it.
		// Both read the fleet's freeze first: sign mints nothing while it
		// holds (or when it cannot be read).
		"chaos sign":   needs(secretRead, freezeRead, record, recordProof),
		"chaos verify": needs(secretRead, freezeRead),
		"chaos key id": needs(secretRead),
		// The fleet's freeze, a lever like the others: read (alone: a set is
		// never asked of the table's policy; a lift with the policy, in one
		// batch), written with its record in one transaction, settled by
		// reading that record when the answer is lost, announced.
		"freeze":        needs(freezeBatchRead, freezePut, record, recordProof, notifyPublish),
		"freeze lift":   withAsking(policyBatchRead, freezeBatchRead, freezePut, record, recordProof, notifyPublish),
		"freeze status": needs(freezeRead),
		"chaos key rotate": needs(secretRead, Need{Action: PutSecretValue}, Need{Action: UpdateSecretVersionStage}, record, recordProof,
			notifyPublish),
		// A drill's levers (the example drills and one reading CloudWatch
		// gauges): force and clear overrides, drain and restore buckets, mint
		// chaos headers, wait on the gauges and watch the alarms of its stop
		// conditions, record every change with it, announce the run. Before
		// any lever it reads the table's policy and, with --request, its
		// approved drill request, in one batch read.
		// An approved drill request is proven by its proofs and closed marker,
		// and the policy by its own, read in a second batch. It reads the
		// fleet's freeze before any lever, and at every guard poll: no drill
		// runs while the fleet is frozen.
		"drill run": needs(freezeRead, policyBatchRead, requestBatchRead, proofBatchRead, closedBatchRead, breakerRead, breakerPut, breakerDelete,
			bucketRead, bucketPut, secretRead, gauges, alarms, record, recordProof, notifyPublish),
		// drill recover finishes a dead run's rollbacks from the audit trail:
		// the run's records on each lever (the audit index by subject, filtered
		// by run_id), then the override or bucket as the rollback finds it, the
		// override's clear with its record, and its notification.
		// (Putting a bucket back writes rl# as drill run's rollback does.)
		"drill recover": needs(indexRead, breakerRead, bucketRead, breakerDelete, record, recordProof, notifyPublish),
		// The reference data plane (koshactl sandbox): it reads each override
		// with the fleet's freeze (one batch read) and the chaos keys, takes
		// tokens with a conditional PutItem of its own, and records chaos
		// headers it applied or refused under audit#dp# (a transaction of one
		// write each, read back when its answer is lost).
		"sandbox": needs(batchRead, freezeBatchRead, bucketRead, Need{PutItem, BucketItems, false}, secretRead,
			Need{PutItem, DataPlaneItems, true}, Need{GetItem, DataPlaneItems, false}),
		// Table administration: create the table (and TTL) where it is missing;
		// add the indexes an older table lacks (unless its tags say a
		// CloudFormation stack manages it), then index the existing audit
		// records and overrides with conditional PutItems of their own.
		// The table's change policy: read by anyone who reads the table; set,
		// with its record, by the admin alone.
		"policy get": needs(policyRead),
		"can-i":      needs(policyRead),
		// The admin's proof of the text goes with it; setting the same text
		// again reads that proof (an item it does not prove is set again).
		"policy set": needs(policyRead, policyPut, ownProof(VerbSet), proofRead, record, recordProof, notifyPublish),
		"store init": needs(Need{Action: DescribeTable}, Need{Action: CreateTable}, Need{Action: DescribeTimeToLive},
			Need{Action: UpdateTimeToLive}),
		// Its backfill rewrites audit records, overrides, change requests and
		// reviews with the index attributes they lack.
		"store migrate": needs(Need{Action: DescribeTable}, Need{Action: ListTagsOfResource}, Need{Action: UpdateTable},
			Need{Action: Scan, Prefix: AuditItems}, Need{Action: Scan, Prefix: BreakerItems}, requestScan, reviewScan,
			Need{PutItem, AuditItems, false}, Need{PutItem, BreakerItems, false}, Need{PutItem, RequestItems, false}, Need{PutItem, ReviewItems, false}),
	}
})

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
	// Requester reads what a reader reads and asks for changes: it writes
	// change requests and their records of asking, never a lever or an
	// approver's record (koshactl mcp, an incident agent's server, runs
	// with it; so do people who may only ask).
	Requester Role = "requester"
	// Approver reads what a reader reads and decides change requests:
	// approving applies the requested change (so the role writes levers,
	// as every role that applies a change must), denying closes one, and
	// it acknowledges break-glass reviews.
	Approver Role = "approver"
	// Admin creates and migrates the table (store init, store migrate) and
	// sets its change policy (policy set): the infrastructure pipeline's or
	// a platform engineer's, never on-call's.
	Admin Role = "admin"
)

// Roles lists every role, in the order documented.
var Roles = []Role{Reader, Requester, Operator, Approver, DrillRunner, DataPlane, Admin}

// RolePaths is the command paths each role is for. They are written out
// (no append at package initialisation: every koshactl process pays for
// what it builds there); a reader's paths begin the requester's, the
// operator's and the approver's (TestRolesExtendTheReader).
var RolePaths = map[Role][]string{
	Reader: {"breaker list", "breaker list --scan", "breaker get", "breaker status", "ratelimit get", "ratelimit list",
		"audit list", "audit list --scan", "policy get", "diff", "request list", "request list --all", "request list --waiting-on-me", "request show", "can-i", "freeze status", "dashboard", "mcp --read-only"},
	Requester: {"breaker list", "breaker list --scan", "breaker get", "breaker status", "ratelimit get", "ratelimit list",
		"audit list", "audit list --scan", "policy get", "diff", "request list", "request list --all", "request list --waiting-on-me", "request show", "can-i", "freeze status", "dashboard", "mcp --read-only",
		"mcp", "request cancel", "drill request", "apply --request"},
	Operator: {"breaker list", "breaker list --scan", "breaker get", "breaker status", "ratelimit get", "ratelimit list",
		"audit list", "audit list --scan", "policy get", "diff", "request list", "request list --all", "request list --waiting-on-me", "request show", "can-i", "freeze status", "dashboard", "mcp --read-only",
		"breaker force-open", "breaker clear", "breaker clear --all", "apply", "freeze", "freeze lift",
		"ratelimit reset", "ratelimit drain", "ratelimit set", "chaos sign", "chaos verify", "chaos key id", "chaos key rotate",
		"request cancel", "request ack", "drill request", "apply --request", "audit list --unapproved --notify"},
	Approver: {"breaker list", "breaker list --scan", "breaker get", "breaker status", "ratelimit get", "ratelimit list",
		"audit list", "audit list --scan", "policy get", "diff", "request list", "request list --all", "request list --waiting-on-me", "request show", "can-i", "freeze status", "dashboard", "mcp --read-only",
		"request approve", "request deny", "request ack"},
	DrillRunner: {"drill run", "drill recover"},
	DataPlane:   {"sandbox"},
	Admin:       {"store init", "store migrate", "policy set", "policy get"},
}

// coveredByWider reports whether another of all grants n already: the
// same action on a shorter prefix of n's (audit# covers audit#rq#), in
// the same place (a transaction) or anywhere.
func coveredByWider(n Need, all []Need) bool {
	if n.Prefix == "" || !n.keyed() {
		return false
	}
	for _, m := range all {
		if m.Action == n.Action && m.Prefix != "" && m.Prefix != n.Prefix && strings.HasPrefix(n.Prefix, m.Prefix) &&
			(m.Transaction == n.Transaction || !m.Transaction) {
			return true
		}
	}
	return false
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	if slices.Contains(Roles, Role(s)) {
		return Role(s), nil
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: use one of %s", s, strings.Join(names, ", "))
}

// Needs returns the union of the needs of the role's command paths, sorted
// and without repeats. A write needed both alone and in a transaction is
// needed alone: that grant covers both; an item action on a prefix the
// role is granted a shorter one of (audit#rq# beside audit#) is covered by
// that.
func (r Role) Needs() []Need {
	var out []Need
	for _, p := range RolePaths[r] {
		for _, n := range Commands()[p] {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	all := slices.Clone(out)
	out = slices.DeleteFunc(out, func(n Need) bool {
		alone := n
		alone.Transaction = false
		return n.Transaction && slices.Contains(all, alone) || coveredByWider(n, all)
	})
	slices.SortFunc(out, func(a, b Need) int { return strings.Compare(a.String(), b.String()) })
	return out
}
