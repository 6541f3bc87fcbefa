package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

const (
	// BusyTimeout is how long a write waits for another process's write
	// transaction before failing with store.ErrUnavailable.
	BusyTimeout = 10 * time.Second
	// SweepGrace is how long past its ttl an item is kept before
	// [Store.Sweep] removes it, so an item a reader or a conditional writer
	// still looks at does not vanish under it.
	SweepGrace = time.Hour
	// SweepBatch is the most expired items one write collects (see
	// [WithSweep]), so collecting never holds a write up for long.
	SweepBatch = 100
	// SweepInterval is how long a [Store] opened [WithSweep] waits after a
	// collection that found no more than it deleted before the next.
	SweepInterval = 10 * time.Minute
	// DefaultPageSize is the number of items a scan reads per query when the
	// query does not say.
	DefaultPageSize = 500
	// schemaVersion is the PRAGMA user_version this code writes and reads.
	schemaVersion = 3
	// maxOpenConns bounds the connections of one Store.
	maxOpenConns = 8
)

var (
	_ store.Store       = (*Store)(nil)
	_ store.BatchGetter = (*Store)(nil)
	_ store.Querier     = (*Store)(nil)
)

// Store is the embedded item store. It is safe for concurrent use, and
// several Stores (in one process or several) may share one file.
type Store struct {
	db   *sql.DB
	path string
	// writeSem serializes this Store's write transactions.
	writeSem chan struct{}
	// sweepClock, when set ([WithSweep]), is the clock write transactions
	// collect expired items by; nextSweep is when the next one does.
	// nextSweep is only touched inside a write transaction (under writeSem).
	sweepClock clock.Clock
	nextSweep  time.Time
}

// An Option changes how [Open] sets a Store up.
type Option func(*Store)

// WithSweep makes the Store the local stand-in for DynamoDB's TTL deletion:
// a write transaction that succeeds also deletes, in the same transaction,
// at most [SweepBatch] items whose ttl is more than [SweepGrace] before
// clk's now, each only if its ttl (as stored then) is still that old. It
// does so on the Store's first write, then again on the next write while a
// batch came back full (a backlog), else once [SweepInterval] has passed on
// clk. A write the conditions refuse deletes nothing. Reads never collect.
func WithSweep(clk clock.Clock) Option { return func(s *Store) { s.sweepClock = clk } }

// Open opens the database at path, creating the file, its parent directories
// and the schema when missing. The file is created with mode 0600, the
// directories with 0700.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("open embedded store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open embedded store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open embedded store %s: %w: %w", abs, store.ErrUnavailable, err)
	}
	// Create the file ourselves so its mode is 0600 whatever SQLite's default;
	// SQLite gives the -wal and -shm files the database file's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // G304: the store file the context names
	if err != nil {
		return nil, fmt.Errorf("open embedded store %s: %w: %w", abs, store.ErrUnavailable, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("open embedded store %s: %w", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("open embedded store %s: %w", abs, err)
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	s := &Store{db: db, path: abs, writeSem: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close() // the migration error is the one to report
		return nil, err
	}
	return s, nil
}

// dsn is the driver's connection string for the file at abs: a file: URI
// (so any character in the path is safe) with the pragmas every connection
// needs, and BEGIN IMMEDIATE for every read-write transaction.
func dsn(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive letters
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: p}).EscapedPath() + "?" + q.Encode()
}

// migrate brings the schema to schemaVersion. Several processes opening a
// new file at once race to switch it to WAL, and SQLite answers the losers
// SQLITE_BUSY at once, without waiting on the busy timeout (it cannot wait
// there without risking a deadlock). migrate retries those for up to
// BusyTimeout, so "locked for more than BusyTimeout" stays true.
func (s *Store) migrate(ctx context.Context) error {
	deadline := time.Now().Add(BusyTimeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := s.migrateOnce(ctx)
		if err == nil || !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		if err := clock.Sleep(ctx, nil, wait); err != nil {
			return s.wrap(ctx, "open embedded store", err)
		}
	}
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

func (s *Store) migrateOnce(ctx context.Context) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var version int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			return err
		}
		if version > schemaVersion {
			return fmt.Errorf("schema version %d is newer than this koshactl understands (%d): upgrade koshactl", version, schemaVersion)
		}
		if version == schemaVersion {
			return nil
		}
		// Version 1 had the table and the ttl index; version 2 adds the
		// store's secondary indexes, version 3 the lists index. Every
		// statement is idempotent, so one list migrates a new file and an
		// older one alike.
		stmts := []string{
			`CREATE TABLE IF NOT EXISTS items (
				pk    TEXT PRIMARY KEY NOT NULL,
				attrs TEXT NOT NULL,
				ttl   INTEGER
			) WITHOUT ROWID`,
			`CREATE INDEX IF NOT EXISTS items_ttl ON items (ttl) WHERE ttl IS NOT NULL`,
		}
		for _, ix := range store.Indexes {
			stmts = append(stmts, indexDDL(ix))
		}
		stmts = append(stmts, `PRAGMA user_version = `+strconv.Itoa(schemaVersion))
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.wrap(ctx, "open embedded store", err)
	}
	return nil
}

// Describe returns "sqlite <path>".
func (s *Store) Describe() string { return "sqlite " + s.path }

// Close closes the database. Operations after Close fail.
func (s *Store) Close() error { return s.db.Close() }

// Get returns the item stored under pk, or an error wrapping
// store.ErrNotFound.
func (s *Store) Get(ctx context.Context, pk string) (store.Item, error) {
	var attrs string
	err := s.db.QueryRowContext(ctx, `SELECT attrs FROM items WHERE pk = ?`, pk).Scan(&attrs)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get %q: %w", pk, store.ErrNotFound)
	}
	if err != nil {
		return nil, s.wrap(ctx, fmt.Sprintf("get %q", pk), err)
	}
	it, err := decode(pk, attrs)
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", pk, err)
	}
	return it, nil
}

// Put writes item if cond holds, replacing any previous item whole.
func (s *Store) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	op := fmt.Sprintf("put %q", item.PK())
	if err := item.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := cond.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return single(s.apply(ctx, op, []store.Op{store.PutOp(item, cond)}))
}

// Delete removes the item under pk if cond holds. Deleting an absent item
// succeeds when cond allows an absent item.
func (s *Store) Delete(ctx context.Context, pk string, cond store.Condition) error {
	op := fmt.Sprintf("delete %q", pk)
	if err := cond.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return single(s.apply(ctx, op, []store.Op{store.DeleteOp(pk, cond)}))
}

// single is the refusal of a one-item write as the contract has it, a
// *store.ConditionError carrying the item as stored.
func single(err error) error {
	if tce := (*store.TxConflictError)(nil); errors.As(err, &tce) {
		return &tce.Conflicts[0]
	}
	return err
}

// upsertSQL writes one row whole, replacing any row under its pk.
const upsertSQL = `INSERT INTO items (pk, attrs, ttl) VALUES (?, ?, ?)
	ON CONFLICT (pk) DO UPDATE SET attrs = excluded.attrs, ttl = excluded.ttl`

func getTx(ctx context.Context, tx *sql.Tx, pk string) (store.Item, error) {
	var attrs string
	err := tx.QueryRowContext(ctx, `SELECT attrs FROM items WHERE pk = ?`, pk).Scan(&attrs)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decode(pk, attrs)
}

// writeTx runs fn in a BEGIN IMMEDIATE transaction, committing when fn
// returns nil.
func (s *Store) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSem }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Scan yields the items whose pk starts with q.Prefix, in pk order, q.PageSize
// (default [DefaultPageSize]) per query. q.Segments is ignored: one file has
// nothing to parallelise. No database connection is held while the caller's
// loop body runs, so it may write to the store.
func (s *Store) Scan(ctx context.Context, q store.ScanQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		pageSize := q.PageSize
		if pageSize <= 0 {
			pageSize = DefaultPageSize
		}
		examined := 0
		after, first := "", true
		for {
			page, more, err := s.page(ctx, q.Prefix, after, first, pageSize)
			if err != nil {
				yield(nil, s.wrap(ctx, fmt.Sprintf("scan %q", q.Prefix), err))
				return
			}
			first = false
			q.Stats.Add(len(page), 0)
			examined += len(page)
			if q.Progress != nil && len(page) > 0 {
				q.Progress(examined)
			}
			for _, it := range page {
				if !yield(it, nil) {
					return
				}
			}
			if !more {
				return
			}
			after = page[len(page)-1].PK()
		}
	}
}

// page reads up to n items with the prefix, from the first pk at or after
// prefix (first) or strictly after after. more reports whether another page
// may follow. Keys with a prefix sort contiguously from the prefix itself, so
// the first key without it ends the scan.
func (s *Store) page(ctx context.Context, prefix, after string, first bool, n int) (items []store.Item, more bool, err error) {
	q, from := `SELECT pk, attrs FROM items WHERE pk > ? ORDER BY pk LIMIT ?`, after
	if first {
		q, from = `SELECT pk, attrs FROM items WHERE pk >= ? ORDER BY pk LIMIT ?`, prefix
	}
	more = true
	err = s.collect(ctx, q, []any{from, n}, func(pk string) bool {
		more = strings.HasPrefix(pk, prefix)
		return more
	}, func(it store.Item) { items = append(items, it) })
	return items, more && len(items) == n, err
}

// Sweep deletes the items whose ttl attribute (epoch seconds) is more than
// [SweepGrace] before now, and returns how many it deleted. It is garbage
// collection, the embedded counterpart of DynamoDB's TTL: readers check expiry
// themselves and never depend on it having run. A Store opened [WithSweep]
// collects a batch at a time by itself.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = sweepTx(ctx, tx, now, -1)
		return err
	})
	if err != nil {
		return 0, s.wrap(ctx, "sweep expired items", err)
	}
	return n, nil
}

// sweepTx deletes up to limit (all when negative) of the items whose ttl is
// more than [SweepGrace] before now, the longest expired first, each only if
// its ttl as stored when it is deleted is still that old.
func sweepTx(ctx context.Context, tx *sql.Tx, now time.Time, limit int) (int64, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM items WHERE ttl < ?1 AND pk IN
		(SELECT pk FROM items WHERE ttl IS NOT NULL AND ttl < ?1 ORDER BY ttl LIMIT ?2)`,
		now.Add(-SweepGrace).Unix(), limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sweepDue collects a batch of expired items in tx, a write transaction
// whose own writes are done, when the Store was opened [WithSweep] and a
// collection is due. Collecting is garbage collection: a failed batch is
// left for a later write and does not fail this one (a failure that ended
// the transaction fails its commit, which reports it).
func (s *Store) sweepDue(ctx context.Context, tx *sql.Tx) {
	if s.sweepClock == nil {
		return
	}
	now := s.sweepClock.Now()
	if now.Before(s.nextSweep) {
		return
	}
	n, err := sweepTx(ctx, tx, now, SweepBatch)
	if err != nil || n >= SweepBatch {
		return // a backlog (or a failure): the next write collects again
	}
	s.nextSweep = now.Add(SweepInterval)
}

// wrap classifies a database error: context errors stay as they are, a
// database locked past the busy timeout and every other failure of the
// database match store.ErrUnavailable.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	var se *msqlite.Error
	switch {
	case ctx.Err() != nil:
		// The driver reports a canceled statement as SQLITE_INTERRUPT.
		return fmt.Errorf("%s: %w", op, ctx.Err())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, store.ErrInvalidItem),
		errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_INTERRUPT:
		return fmt.Errorf("%s: %w", op, err)
	case isBusy(err):
		return fmt.Errorf("%s: %s is locked by another process for more than %v: %w: %w", op, s.path, BusyTimeout, store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %s: %w: %w", op, s.Describe(), store.ErrUnavailable, err)
}

// encode renders every attribute but the pk as a JSON object of values in
// DynamoDB's JSON notation ({"reason":{"S":"INC-42"},"note":{"BOOL":true}}),
// so the file holds every type an item can (store.Item) exactly.
func encode(it store.Item) (string, error) {
	m := make(map[string]json.RawMessage, len(it))
	for k, v := range it {
		if k == store.PK {
			continue
		}
		b, err := store.MarshalTyped(v)
		if err != nil {
			return "", fmt.Errorf("%w: attribute %q: %w", store.ErrInvalidItem, k, err)
		}
		m[k] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode item: %w", err)
	}
	return string(b), nil
}

// decode reads a row: the fast way when it can ([decodeFast]), else the
// general way, which reads every type.
func decode(pk, attrs string) (store.Item, error) {
	if it, ok := decodeFast(pk, attrs); ok {
		return it, nil
	}
	return decodeGeneral(pk, attrs)
}

// decodeGeneral reads a row's attrs (every attribute in DynamoDB's JSON
// notation) with encoding/json.
func decodeGeneral(pk, attrs string) (store.Item, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(attrs), &m); err != nil {
		return nil, fmt.Errorf("decode item %q: %w", pk, err)
	}
	it := make(store.Item, len(m)+1)
	for k, raw := range m {
		v, err := store.UnmarshalTyped(raw)
		if err != nil {
			return nil, fmt.Errorf("decode item %q: attribute %q: %w", pk, k, err)
		}
		it[k] = v
	}
	it[store.PK] = pk
	return it, nil
}

// ttlOf returns the item's ttl in whole epoch seconds, or nil when it has
// none or it is not a number (DynamoDB ignores such a ttl too).
func ttlOf(it store.Item) any {
	switch v := it[store.TTLAttr].(type) {
	case int64:
		return v
	case float64:
		return int64(math.Floor(max(min(v, math.MaxInt64), math.MinInt64)))
	case store.Number:
		if f, ok := it.Float(store.TTLAttr); ok {
			return int64(math.Floor(max(min(f, math.MaxInt64), math.MinInt64)))
		}
	}
	return nil
}

// Transact applies c in one write transaction: every op's condition is
// checked against the items as stored, and either every op is written or,
// when any condition fails, none is and the error is a
// *store.TxConflictError naming each refused op.
func (s *Store) Transact(ctx context.Context, c store.Change) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("change %s: %w: %w", c.Token, store.ErrNotSent, ctx.Err())
	}
	return s.apply(ctx, "change "+c.Token, c.Ops)
}

// apply writes ops (valid: their items and conditions checked) in one
// write transaction if every condition holds for the items as stored then,
// checked by store.Change.ApplyTo (the in-memory stores' one rule);
// otherwise it writes nothing and returns the *store.TxConflictError.
func (s *Store) apply(ctx context.Context, op string, ops []store.Op) error {
	attrs, ttls := make([]string, len(ops)), make([]any, len(ops))
	for i, o := range ops {
		if o.Put != nil {
			it := store.Normalize(o.Put)
			a, err := encode(it)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			attrs[i], ttls[i] = a, ttlOf(it)
		}
	}
	var conflict error
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		cur := map[string]store.Item{}
		for _, o := range ops {
			if !o.Cond.IsAlways() {
				it, err := getTx(ctx, tx, o.PK())
				if err != nil {
					return err
				}
				if it != nil {
					cur[o.PK()] = it
				}
			}
		}
		if conflict = (store.Change{Ops: ops}).ApplyTo(cur, func(it store.Item) store.Item { return it }); conflict != nil {
			return conflict
		}
		for i, o := range ops {
			var err error
			switch {
			case o.IsCheck():
			case o.Put == nil:
				_, err = tx.ExecContext(ctx, `DELETE FROM items WHERE pk = ?`, o.Delete)
			default:
				_, err = tx.ExecContext(ctx, upsertSQL, o.PK(), attrs[i], ttls[i])
			}
			if err != nil {
				return err
			}
		}
		s.sweepDue(ctx, tx)
		return nil
	})
	if conflict != nil {
		return conflict
	}
	if err != nil {
		return s.wrap(ctx, op, err)
	}
	return nil
}
