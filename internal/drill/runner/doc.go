// Package runner runs a drill ([Runner.Run]): the hypothesis before, the
// steps with their rollback stack and stop conditions, the hypothesis
// after, every rollback on every exit path. It writes the reports (the
// live log, the JSON journal as the run goes, JUnit XML), builds the plan
// of what a run would do ([NewPlan]) and recovers the rollbacks a dead
// run left pending ([Recovery.Run]), under the journal's lock ([LockJournal]).
// The file model is package drill; the kinds are package kinds.
package runner
