// Package proof is how koshactl knows who did something: a proof is an
// item keyed by its writer's STS unique id (aws:userid), written once, in
// the transaction of what it proves, and the IAM policies koshactl renders
// let each principal write proofs under its own id alone
// (dynamodb:LeadingKeys "proof#${aws:userid}#VERB#…"). An item is evidence
// only of what its writer's role may write: a proof is trusted because of
// who could write its key, never because of what another item says.
//
// # Key
//
//	proof#<writer id>#<verb>#<writer>#<kind>#<subject>
//
// The writer id is the STS unique id (an IAM user's id, or ROLEID:SESSION
// for an assumed role); the writer is the caller ARN STS named with it. IAM
// binds both: an IAM user's key must carry its own ARN
// (${aws:PrincipalArn}), and an assumed role's session name is the last
// part of both its unique id and its ARN ([Bound]), which the role's trust
// policy pins to the person (sts:RoleSessionName = ${aws:username}, or
// Identity Center's user name). The verb comes right after the id, so a
// policy grants each role its verbs alone (a requester asks, never
// approves). An identity STS did not verify (a local or static-credentials
// context, where no IAM stands behind the table) writes under the writer id
// "unverified" with its asserted name: such a proof proves nothing an
// unverified actor could not say.
//
// See docs/contracts/policy.md ("Proofs") and SECURITY.md.
package proof
