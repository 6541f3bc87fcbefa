package sqlite

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/kosha-platform/koshactl/internal/lazyre"
	"github.com/kosha-platform/koshactl/internal/store"
)

// attrNameRE is what an index attribute name may look like: they are the
// store's constants, spliced into SQL because an expression index matches
// only the literal expression it was created with.
var attrNameRE = lazyre.New(`^[a-z][a-z0-9_]*$`)

// indexExpr is the SQL expression an index is partitioned by: the string
// value of its attribute in the item's JSON.
func indexExpr(ix store.Index) string { return attrExpr(ix, ix.Attr) }

// sortExpr is the SQL expression an index sorts by: pk, or the string
// value of its Sort attribute.
func sortExpr(ix store.Index) string {
	if ix.Sort == "" {
		return "pk"
	}
	return attrExpr(ix, ix.Sort)
}

// attrExpr is the string value of attr in the item's JSON. Index
// attributes are the store's constants, spliced into SQL because an
// expression index matches only the literal expression it was created with.
func attrExpr(ix store.Index, attr string) string {
	if !attrNameRE.MatchString(attr) || !attrNameRE.MatchString(strings.ReplaceAll(ix.Name, "-", "_")) {
		panic(fmt.Sprintf("sqlite: index %q on attribute %q: names must match %s", ix.Name, attr, attrNameRE))
	}
	return fmt.Sprintf(`json_extract(attrs, '$.%s.S')`, attr)
}

// indexed is the SQL condition of an item being in ix: it carries the
// index's attributes as strings, as in a sparse DynamoDB index.
func indexed(ix store.Index) string {
	cond := indexExpr(ix) + " IS NOT NULL"
	if ix.Sort != "" {
		cond += " AND " + sortExpr(ix) + " IS NOT NULL"
	}
	return cond
}

// indexDDL creates ix as a partial expression index: only items in the
// index (indexed) are in it, sorted by its sort key then pk.
func indexDDL(ix store.Index) string {
	cols := indexExpr(ix) + ", pk"
	if ix.Sort != "" {
		cols = indexExpr(ix) + ", " + sortExpr(ix) + ", pk"
	}
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS "ix_%s" ON items (%s) WHERE %s`,
		strings.ReplaceAll(ix.Name, "-", "_"), cols, indexed(ix))
}

// BatchGet returns the items under pks, keyed by pk, in one query per
// [DefaultPageSize] keys.
func (s *Store) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	out := make(map[string]store.Item, len(pks))
	for chunk := range slices.Chunk(pks, DefaultPageSize) {
		args := make([]any, len(chunk))
		for j, pk := range chunk {
			args[j] = pk
		}
		q := `SELECT pk, attrs FROM items WHERE pk IN (?` + strings.Repeat(", ?", len(chunk)-1) + `)`
		if err := s.collect(ctx, q, args, nil, func(it store.Item) { out[it.PK()] = it }); err != nil {
			return nil, s.wrap(ctx, fmt.Sprintf("batch get %d keys", len(chunk)), err)
		}
	}
	return out, nil
}

// collect runs a query of (pk, attrs) rows and passes each decoded item to
// fn. A row whose pk keep (when set) refuses ends the reading, undecoded.
func (s *Store) collect(ctx context.Context, query string, args []any, keep func(pk string) bool, fn func(store.Item)) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pk, attrs string
		if err := rows.Scan(&pk, &attrs); err != nil {
			return err
		}
		if keep != nil && !keep(pk) {
			return rows.Err()
		}
		it, err := decode(pk, attrs)
		if err != nil {
			return err
		}
		fn(it)
	}
	return rows.Err()
}

// ScansInKeyOrder is true: a scan reads the table in pk order, a page at a
// time (store.KeyOrderScanner).
func (s *Store) ScansInKeyOrder() bool { return true }

// QueriesConsistent is true: the embedded store's index queries read the
// items themselves, in one consistent read (store.ConsistentQuerier).
func (s *Store) QueriesConsistent() bool { return true }

// Query reads one partition of an index from its SQLite expression index,
// [DefaultPageSize] items a query (no connection is held while the caller's
// loop body runs). Reads are consistent, and yield whole items whatever the
// index's projection.
func (s *Store) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		op := fmt.Sprintf("query index %s for %q", q.Index.Name, q.Key)
		order, cmp := "ASC", ">"
		if q.Descending {
			order, cmp = "DESC", "<"
		}
		sortBy := sortExpr(q.Index)
		// The page's last row, by (sort key, pk): an index sorted by its own
		// attribute may hold equal sort keys, which pk orders.
		var after *[2]string
		yielded := 0
		for {
			n := DefaultPageSize
			if q.Limit > 0 {
				n = min(n, q.Limit-yielded)
			}
			where := indexExpr(q.Index) + ` = ? AND ` + indexed(q.Index)
			args := []any{q.Key}
			if q.From != "" {
				where += ` AND ` + sortBy + ` >= ?`
				args = append(args, q.From)
			}
			if q.To != "" {
				where += ` AND ` + sortBy + ` <= ?`
				args = append(args, q.To)
			}
			orderBy := `pk ` + order
			if after != nil && q.Index.Sort == "" {
				where += ` AND pk ` + cmp + ` ?`
				args = append(args, after[1])
			}
			if q.Index.Sort != "" {
				orderBy = sortBy + ` ` + order + `, pk ` + order
				if after != nil {
					// (sort key, pk) past the cursor, written so that SQLite
					// reads the index from the cursor on (it does not for a
					// row value: each page would read from the top).
					where += ` AND ` + sortBy + ` ` + cmp + `= ? AND (` + sortBy + ` ` + cmp + ` ? OR pk ` + cmp + ` ?)`
					args = append(args, after[0], after[0], after[1])
				}
			}
			args = append(args, n)
			var page []store.Item
			err := s.collect(ctx, `SELECT pk, attrs FROM items WHERE `+where+` ORDER BY `+orderBy+` LIMIT ?`, args, nil,
				func(it store.Item) { page = append(page, it) })
			if err != nil {
				yield(nil, s.wrap(ctx, op, err))
				return
			}
			q.Stats.Add(len(page), 0)
			for _, it := range page {
				if !yield(it, nil) {
					return
				}
				yielded++
			}
			if len(page) < n || (q.Limit > 0 && yielded >= q.Limit) {
				return
			}
			last := page[len(page)-1]
			after = &[2]string{last.Str(q.Index.SortAttr()), last.PK()}
		}
	}
}
