package iam

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Target names the AWS resources one context uses.
type Target struct {
	// Region and Account locate the table and the secret.
	Region, Account string
	// Table is the DynamoDB table's name.
	Table string
	// Secret is the chaos key's Secrets Manager secret: a name or an ARN.
	// Empty: the context keeps its chaos key in a local file, and no
	// Secrets Manager statement is written.
	Secret string
	// Namespace is the CloudWatch namespace of the breaker_state gauges.
	// GetMetricData cannot be limited to one namespace, so it is only
	// recorded in the statement's Sid.
	Namespace string
	// KMSKey is the ARN of the customer-managed KMS key the chaos secret is
	// encrypted with (`iam policy --kms-key-arn`). Empty: the secret uses
	// the account's AWS managed key (aws/secretsmanager), which needs no
	// statement.
	KMSKey string
	// Topics are the context's SNS notification topics (ARNs). Empty: the
	// context announces nothing on SNS, and no SNS statement is written.
	Topics []string
}

// Partition is the ARN partition of the region: aws, aws-cn or aws-us-gov.
func (t Target) Partition() string {
	switch {
	case strings.HasPrefix(t.Region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(t.Region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// TableARN is the table's ARN.
func (t Target) TableARN() string {
	return fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", t.Partition(), t.Region, t.Account, t.Table)
}

// SecretARN is the secret's ARN, or a pattern matching it: Secrets Manager
// appends a dash and six random characters to a secret's name.
func (t Target) SecretARN() string {
	if strings.HasPrefix(t.Secret, "arn:") {
		return t.Secret
	}
	return fmt.Sprintf("arn:%s:secretsmanager:%s:%s:secret:%s-??????", t.Partition(), t.Region, t.Account, t.Secret)
}

func (t Target) validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{{"region", t.Region}, {"account", t.Account}, {"table", t.Table}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("policy target: no %s", strings.Join(missing, ", "))
	}
	if len(t.Account) != 12 || strings.Trim(t.Account, "0123456789") != "" {
		return fmt.Errorf("policy target: account %q is not a 12-digit AWS account id", t.Account)
	}
	if t.KMSKey != "" {
		return CheckKMSKeyARN(t.KMSKey)
	}
	return nil
}

// CheckKMSKeyARN refuses what is not a KMS key ARN
// (arn:PARTITION:kms:REGION:ACCOUNT:key/ID). IAM authorizes kms:Decrypt on
// the key's ARN, so neither an alias nor a bare key id would match.
func CheckKMSKeyARN(arn string) error {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kms" || parts[3] == "" || len(parts[4]) != 12 ||
		!strings.HasPrefix(parts[5], "key/") || len(parts[5]) == len("key/") {
		return fmt.Errorf("KMS key %q is not a key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID): "+
			"IAM matches kms:Decrypt on the key's ARN, not an alias or id; see aws kms describe-key --key-id ALIAS", arn)
	}
	return nil
}

// Document is an IAM policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one Allow statement.
type Statement struct {
	Sid       string                         `json:"Sid"`
	Effect    string                         `json:"Effect"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// LeadingKeysCondition is the condition operator limiting item actions to
// key prefixes. ForAllValues holds vacuously when the request names no key,
// which is why only actions on items by their key get it.
const LeadingKeysCondition = "ForAllValues:StringLike"

// EnclosingOperationCondition is the condition operator limiting item
// writes to the actions of a transaction: dynamodb:EnclosingOperation is
// "TransactWriteItems" for each of them and absent for a PutItem or
// DeleteItem sent alone, which ForAnyValue then refuses (AWS's "Using IAM
// with DynamoDB transactions").
const EnclosingOperationCondition = "ForAnyValue:StringEquals"

// Statement ids: each says what its statement grants.
const (
	SidScan = "ScanTable"
	// SidBatchRead grants BatchGetItem on every prefix the role batch-reads,
	// in one statement (a batch may name keys of several).
	SidBatchRead   = "ItemsBatchRead"
	SidQuery       = "QueryIndexes"
	SidTableAdmin  = "TableAdmin"
	SidChaosKey    = "ChaosKey"
	SidChaosKeyKMS = "ChaosKeyKMS"
	SidGauges      = "BreakerGauges"
	SidAlarms      = "StopConditionAlarms"
	SidNotify      = "NotifyTopics"
)

// Policy renders the least-privilege policy of role on t: one statement per
// DynamoDB item prefix (its actions limited with dynamodb:LeadingKeys), one
// for scans of the table, one for queries of its indexes, one for table
// administration, one for the chaos secret (and one for its
// customer-managed KMS key), one for the CloudWatch gauges, one for alarms,
// one for the context's SNS notification topics.
func Policy(role Role, t Target) (Document, error) {
	if _, ok := RolePaths[role]; !ok {
		return Document{}, fmt.Errorf("unknown role %q", role)
	}
	if err := t.validate(); err != nil {
		return Document{}, err
	}
	doc := Document{Version: "2012-10-17"}
	type items struct {
		prefix string
		tx     bool
	}
	byPrefix := map[items][]string{}
	var scans, queries, admin, secret, kms, gaugeReads, alarmReads, publish []string
	var batchPrefixes, ownProofVerbs []string
	for _, n := range role.Needs() {
		switch {
		case n.Action == PutItem && strings.HasPrefix(n.Prefix, OwnProofs):
			// One statement for the caller's own proofs, every verb the
			// role writes (ownProofStatement).
			ownProofVerbs = appendNew(ownProofVerbs, strings.TrimSuffix(strings.TrimPrefix(n.Prefix, OwnProofs), "#"))
		case n.Action == BatchGetItem:
			// One statement for every prefix batch-read: a batch naming
			// keys of two prefixes (the overrides and the table's policy)
			// is allowed only by a statement whose LeadingKeys match them
			// all (ForAllValues).
			batchPrefixes = appendNew(batchPrefixes, n.Prefix+"*")
		case n.keyed():
			k := items{n.Prefix, n.Transaction}
			byPrefix[k] = appendNew(byPrefix[k], n.Action)
		case n.Action == Scan:
			scans = appendNew(scans, n.Action)
		case n.Action == Query:
			queries = appendNew(queries, n.Action)
		case n.Service() == "dynamodb":
			admin = appendNew(admin, n.Action)
		case n.Service() == "secretsmanager":
			secret = appendNew(secret, n.Action)
			switch n.Action {
			case GetSecretValue:
				kms = appendNew(kms, KMSDecrypt)
			case PutSecretValue:
				kms = appendNew(kms, KMSGenerateDataKey)
			}
		case n.Action == DescribeAlarms:
			alarmReads = appendNew(alarmReads, n.Action)
		case n.Service() == "sns":
			publish = appendNew(publish, n.Action)
		case n.Service() == "cloudwatch":
			gaugeReads = appendNew(gaugeReads, n.Action)
		}
	}
	keys := slices.SortedFunc(maps.Keys(byPrefix), func(a, b items) int {
		if c := strings.Compare(prefixName(a.prefix), prefixName(b.prefix)); c != 0 {
			return c
		}
		if a.tx == b.tx {
			return 0
		}
		if b.tx {
			return -1
		}
		return 1
	})
	for _, k := range keys {
		slices.Sort(byPrefix[k])
		st := Statement{
			Sid: "Items" + prefixName(k.prefix), Effect: "Allow", Action: byPrefix[k], Resource: []string{t.TableARN()},
			Condition: map[string]map[string][]string{LeadingKeysCondition: {"dynamodb:LeadingKeys": {k.prefix + "*"}}},
		}
		if k.tx {
			st.Sid += "InTransactions"
			st.Condition[EnclosingOperationCondition] = map[string][]string{"dynamodb:EnclosingOperation": {TransactWriteItems}}
		}
		if k.prefix == ClosedItems && slices.ContainsFunc(byPrefix[k], isWrite) {
			// A marker dated for DynamoDB's TTL would be deleted: its
			// writes name its own attributes alone.
			st.Condition[AttributesCondition] = map[string][]string{"dynamodb:Attributes": slices.Clone(ClosedAttributes)}
		}
		doc.Statement = append(doc.Statement, st)
	}
	if len(ownProofVerbs) > 0 {
		doc.Statement = append(doc.Statement, ownProofStatement(ownProofVerbs, t))
	}
	// allow adds the statement granting actions (when there are any) on
	// resources, under cond.
	allow := func(sid string, actions, resources []string, cond map[string]map[string][]string) {
		if len(actions) > 0 {
			doc.Statement = append(doc.Statement, Statement{Sid: sid, Effect: "Allow", Action: actions, Resource: resources, Condition: cond})
		}
	}
	table := []string{t.TableARN()}
	if len(batchPrefixes) > 0 {
		slices.Sort(batchPrefixes)
		allow(SidBatchRead, []string{BatchGetItem}, table, map[string]map[string][]string{LeadingKeysCondition: {"dynamodb:LeadingKeys": batchPrefixes}})
	}
	allow(SidScan, scans, table, nil)
	allow(SidQuery, queries, []string{t.TableARN() + "/index/*"}, nil)
	slices.Sort(admin)
	allow(SidTableAdmin, admin, table, nil)
	if len(secret) > 0 && t.Secret != "" {
		allow(SidChaosKey, secret, []string{t.SecretARN()}, nil)
		if t.KMSKey != "" {
			allow(SidChaosKeyKMS, kms, []string{t.KMSKey}, map[string]map[string][]string{
				"StringEquals": {"kms:ViaService": {"secretsmanager." + t.Region + ".amazonaws.com"}},
				"StringLike":   {"kms:EncryptionContext:SecretARN": {t.SecretARN()}},
			})
		}
	}
	gauges := SidGauges
	if t.Namespace != "" {
		gauges += sidWord(t.Namespace)
	}
	allow(gauges, gaugeReads, []string{"*"}, nil)
	allow(SidAlarms, alarmReads, []string{"*"}, nil)
	if len(t.Topics) > 0 {
		topics := slices.Clone(t.Topics)
		slices.Sort(topics)
		allow(SidNotify, publish, slices.Compact(topics), nil)
	}
	return doc, nil
}

// isWrite reports whether action writes or checks an item (a closed
// marker's writes are limited to its attributes).
func isWrite(action string) bool {
	switch action {
	case PutItem, DeleteItem, ConditionCheckItem:
		return true
	}
	return false
}

// SidOwnProofs grants PutItem, in transactions, on the caller's own
// proofs alone: keys starting with its unique id and a verb the role
// writes ([OwnProofPatterns]).
const SidOwnProofs = "ItemsOwnProofsInTransactions"

// ownProofStatement is the grant of the caller's own proofs of verbs.
func ownProofStatement(verbs []string, t Target) Statement {
	slices.Sort(verbs)
	var patterns []string
	for _, v := range verbs {
		patterns = append(patterns, OwnProofPatterns(v)...)
	}
	return Statement{Sid: SidOwnProofs, Effect: "Allow", Action: []string{PutItem}, Resource: []string{t.TableARN()},
		Condition: map[string]map[string][]string{
			LeadingKeysCondition:        {"dynamodb:LeadingKeys": patterns},
			EnclosingOperationCondition: {"dynamodb:EnclosingOperation": {TransactWriteItems}},
		}}
}

// prefixName names an item prefix in a Sid.
func prefixName(p string) string {
	switch p {
	case BreakerItems:
		return "BreakerOverrides"
	case BucketItems:
		return "RateLimitBuckets"
	case AuditItems:
		return "AuditRecords"
	case DataPlaneItems:
		return "DataPlaneRecords"
	case OwnProposals:
		return "OwnProposals"
	}
	return sidWord(p)
}

// sidWord turns "breaker#" or "Kosha/Resilience" into "Breaker",
// "KoshaResilience": a Sid is alphanumeric.
func sidWord(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			if up {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			up = false
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	return b.String()
}

// appendNew appends v to s unless s holds it already.
func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
