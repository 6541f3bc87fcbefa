package dynamo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/clock"
	"github.com/kosha-platform/koshactl/internal/store"
)

// Retry bounds for the keys and items a batch request leaves unprocessed
// (DynamoDB returns them when a request exceeds 16 MB or a partition is
// throttled; AWS asks callers to retry them with exponential backoff).
const (
	// BatchAttempts is how many requests a batch makes for one chunk before
	// giving up with store.ErrThrottled.
	BatchAttempts = 8
	batchMinDelay = 10 * time.Millisecond
	batchMaxDelay = time.Second
)

// backoff returns the delay before retry attempt n (1-based): exponential
// with full jitter, capped.
func backoff(n int) time.Duration {
	d := min(batchMinDelay<<min(n-1, 16), batchMaxDelay)
	return d/2 + rand.N(d/2+1) //nolint:gosec // G404: jitter, not a secret
}

// SetSleep replaces how the store waits between retries of unprocessed batch
// keys and between polls of a building index; nil restores the timer. Tests
// pass a function that returns at once.
func (s *Store) SetSleep(sleep func(ctx context.Context, d time.Duration) error) {
	s.sleep = sleep
}

// SetClock makes the store's waits (between polls of a building index)
// and their deadlines follow clk: a test's fake clock moves as the store
// waits. nil restores the wall clock and the timer.
func (s *Store) SetClock(clk clock.Clock) {
	if clk == nil {
		s.now, s.sleep = nil, nil
		return
	}
	s.now = clk.Now
	s.sleep = func(ctx context.Context, d time.Duration) error { return clock.Sleep(ctx, clk, d) }
}

func (s *Store) clockNow() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *Store) wait(ctx context.Context, d time.Duration) error {
	if s.sleep != nil {
		return s.sleep(ctx, d)
	}
	return clock.Sleep(ctx, nil, d)
}

// BatchGet reads pks with strongly consistent BatchGetItem requests of at
// most store.MaxBatchGet keys, sent concurrently, and retries unprocessed
// keys with backoff.
func (s *Store) BatchGet(ctx context.Context, pks []string) (map[string]store.Item, error) {
	keys := slices.Compact(slices.Sorted(slices.Values(pks))) // each key once
	out := make(map[string]store.Item, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	for chunk := range slices.Chunk(keys, store.MaxBatchGet) {
		wg.Go(func() {
			items, err := s.batchGetChunk(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			for _, it := range items {
				out[it.PK()] = it
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

func (s *Store) batchGetChunk(ctx context.Context, pks []string) ([]store.Item, error) {
	op := fmt.Sprintf("batch get %d keys", len(pks))
	keys := make([]map[string]types.AttributeValue, len(pks))
	for i, pk := range pks {
		keys[i] = key(pk)
	}
	req := map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	var items []store.Item
	for attempt := 1; ; attempt++ {
		out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, s.classify(ctx, op, "", err)
		}
		for _, av := range out.Responses[s.table] {
			it, err := unmarshal(av)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			items = append(items, it)
		}
		left, ok := out.UnprocessedKeys[s.table]
		if !ok || len(left.Keys) == 0 {
			return items, nil
		}
		if attempt == BatchAttempts {
			return nil, fmt.Errorf("%s on %s: %d keys still unprocessed after %d requests: %w",
				op, s.Describe(), len(left.Keys), attempt, store.ErrThrottled)
		}
		if err := s.wait(ctx, backoff(attempt)); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		left.ConsistentRead = aws.Bool(true)
		req = map[string]types.KeysAndAttributes{s.table: left}
	}
}

// Query reads one partition of an index (eventually consistent: global
// secondary indexes offer nothing else), at most q.Limit items. A missing
// index yields an error wrapping store.ErrIndexMissing.
func (s *Store) Query(ctx context.Context, q store.IndexQuery) iter.Seq2[store.Item, error] {
	return func(yield func(store.Item, error) bool) {
		op := fmt.Sprintf("query index %s for %q", q.Index.Name, q.Key)
		names := map[string]string{"#k": q.Index.Attr}
		values := map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: q.Key}}
		cond := "#k = :k"
		switch {
		case q.From != "" && q.To != "":
			cond += " AND #s BETWEEN :from AND :to"
		case q.From != "":
			cond += " AND #s >= :from"
		case q.To != "":
			cond += " AND #s <= :to"
		}
		if q.From != "" {
			values[":from"] = &types.AttributeValueMemberS{Value: q.From}
		}
		if q.To != "" {
			values[":to"] = &types.AttributeValueMemberS{Value: q.To}
		}
		if q.From != "" || q.To != "" {
			names["#s"] = q.Index.SortAttr()
		}
		if q.From != "" && q.To != "" && q.From > q.To {
			return // an empty range; DynamoDB would refuse it
		}
		in := &dynamodb.QueryInput{
			TableName:                 &s.table,
			IndexName:                 aws.String(q.Index.Name),
			KeyConditionExpression:    &cond,
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
			ScanIndexForward:          aws.Bool(!q.Descending),
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		}
		yielded := 0
		for {
			if q.Limit > 0 {
				in.Limit = aws.Int32(int32(min(q.Limit-yielded, 1<<30)))
			}
			out, err := s.client.Query(ctx, in)
			if err != nil {
				yield(nil, s.queryError(ctx, op, q.Index, err))
				return
			}
			q.Stats.Add(int(out.ScannedCount), consumed(out.ConsumedCapacity))
			for _, av := range out.Items {
				it, err := unmarshal(av)
				if err != nil {
					err = fmt.Errorf("%s: %w", op, err)
				}
				if !yield(it, err) || err != nil {
					return
				}
				yielded++
				if q.Limit > 0 && yielded >= q.Limit {
					return
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				return
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
}

// queryError classifies a query's error. DynamoDB answers a query on an
// index the table lacks with a ValidationException naming it ("The table does
// not have the specified index: NAME"); moto with a ResourceNotFoundException
// "Invalid index: NAME for table: ...", which DynamoDB never says (its
// missing table is "Requested resource not found"), so either is
// ErrIndexMissing.
func (s *Store) queryError(ctx context.Context, op string, ix store.Index, err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "index") ||
		apiErr.ErrorCode() == "ResourceNotFoundException" && strings.HasPrefix(apiErr.ErrorMessage(), "Invalid index")) {
		return fmt.Errorf("%s: %s has no index %q (add it with `koshactl store migrate`): %w",
			op, s.Describe(), ix.Name, store.ErrIndexMissing)
	}
	return s.classify(ctx, op, "", err)
}

func consumed(c *types.ConsumedCapacity) float64 {
	if c == nil {
		return 0
	}
	return aws.ToFloat64(c.CapacityUnits)
}
