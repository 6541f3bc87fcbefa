// Package sqlite provides the embedded item store of the local context: a
// single SQLite database file (modernc.org/sqlite, pure Go) that several
// koshactl processes — the CLI, the dashboard, the sandbox — may use at once.
//
// # File
//
// [Open] creates the file (mode 0600) and its parent directories (0700) when
// missing, and the schema inside it:
//
//	items(pk TEXT PRIMARY KEY, attrs TEXT NOT NULL, ttl INTEGER)
//
// attrs holds the item's other attributes as a JSON object in DynamoDB's
// shape, {"name": {"S": "text"}} or {"name": {"N": "12"}}, numbers written by
// store.FormatNumber, so an int64 reads back as an int64 and a fractional
// float64 as the same float64. ttl copies the item's numeric "ttl" attribute
// (epoch seconds) for garbage collection; nothing reads it.
//
// # Garbage collection
//
// A Store opened [WithSweep] is the local stand-in for DynamoDB's TTL: a
// write that succeeds also deletes, in its transaction and after its own
// conditions were checked, at most [SweepBatch] items whose ttl is more than
// [SweepGrace] past, and does so again on the next write while there is a
// backlog, else every [SweepInterval] on the clock it was given. [Store.Sweep]
// collects everything expired at once.
//
// # Concurrency
//
// The database runs in WAL mode, so readers never block the writer or each
// other. Every write is one BEGIN IMMEDIATE transaction that reads the
// current item, evaluates the condition and writes, so a conditional write is
// atomic across processes; a writer that finds another process's write
// transaction open waits for it (busy timeout [BusyTimeout]) instead of
// failing. Within one process, writes through one [Store] queue on a
// semaphore first, so they do not spin on SQLite's busy handler.
//
// synchronous=NORMAL: a committed write survives a crash of any process; a
// power loss may lose the last commits but does not corrupt the file. It
// makes a write two to four times faster than FULL.
//
// docs/contracts/store.md describes the contract both backends keep.
package sqlite
