package sqlite

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/kosha-platform/koshactl/internal/lazyre"
	"github.com/kosha-platform/koshactl/internal/store"
)

// attrNameRE is what an index attribute name may look like: they are the
// store's constants, spliced into SQL because an expression index matches
// only the literal expression it was created with.
var attrNameRE = lazyre.New(`^[a-z][a-z0-9_]*$`)

// indexExpr is the SQL expression an index is built on: the string value of
// its attribute in the item's JSON.
func indexExpr(ix store.Index) string {
	if !attrNameRE.MatchString(ix.Attr) || !attrNameRE.MatchString(strings.ReplaceAll(ix.Name, "-", "_")) {
		panic(fmt.Sprintf("sqlite: index %q on attribute %q: names must match %s", ix.Name, ix.Attr, attrNameRE))
	}
	return fmt.Sprintf(`json_extract(attrs, '$.%s.S')`, ix.Attr)
}

// indexDDL creates ix as a partial expression index: only items that carry
// the attribute are in it, as in a sparse DynamoDB index.
func indexDDL(ix store.Index) string {
	e := indexExpr(ix)
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS "ix_%s" ON items (%s, pk) WHERE %s IS NOT NULL`,
		strings.ReplaceAll(ix.Name, "-", "_"), e, e)
}

// BatchGet returns the items under pks, keyed by pk, in one query per
// [DefaultPageSize] keys.
func (s *Store) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	out := make(map[string]store.Item, len(pks))
	for i := 0; i < len(pks); i += DefaultPageSize {
		chunk := pks[i:min(i+DefaultPageSize, len(pks))]
		args := make([]any, len(chunk))
		for j, pk := range chunk {
			args[j] = pk
		}
		q := `SELECT pk, attrs FROM items WHERE pk IN (?` + strings.Repeat(", ?", len(chunk)-1) + `)`
		if err := s.collect(ctx, q, args, func(it store.Item) { out[it.PK()] = it }); err != nil {
			return nil, s.wrap(ctx, fmt.Sprintf("batch get %d keys", len(chunk)), err)
		}
	}
	return out, nil
}

// collect runs a query of (pk, attrs) rows and passes each decoded item to
// fn.
func (s *Store) collect(ctx context.Context, query string, args []any, fn func(store.Item)) error {
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
		it, err := decode(pk, attrs)
		if err != nil {
			return err
		}
		fn(it)
	}
	return rows.Err()
}

// Query reads one partition of an index from its SQLite expression index,
// [DefaultPageSize] items a query (no connection is held while the caller's
// loop body runs). Reads are consistent.
func (s *Store) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		op := fmt.Sprintf("query index %s for %q", q.Index.Name, q.Key)
		order, cmp := "ASC", ">"
		if q.Descending {
			order, cmp = "DESC", "<"
		}
		from, to := q.From, q.To
		yielded := 0
		cursor := ""
		for {
			n := DefaultPageSize
			if q.Limit > 0 {
				n = min(n, q.Limit-yielded)
			}
			where := indexExpr(q.Index) + ` = ?`
			args := []any{q.Key}
			if from != "" {
				where += ` AND pk >= ?`
				args = append(args, from)
			}
			if to != "" {
				where += ` AND pk <= ?`
				args = append(args, to)
			}
			if cursor != "" {
				where += ` AND pk ` + cmp + ` ?`
				args = append(args, cursor)
			}
			args = append(args, n)
			var page []store.Item
			err := s.collect(ctx, `SELECT pk, attrs FROM items WHERE `+where+` ORDER BY pk `+order+` LIMIT ?`, args,
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
			cursor = page[len(page)-1].PK()
		}
	}
}
