package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kosha-platform/koshactl/internal/store"
)

// Transact writes c with one TransactWriteItems call whose
// ClientRequestToken is c.Token: the SDK's retries of a lost answer, and
// [store.Apply]'s re-issue after an interrupt, are the same transaction,
// which DynamoDB applies once within its ten-minute idempotency window.
// Each op carries its condition and asks for the item as stored when the
// condition fails, so a conflict names what is there.
func (s *Store) Transact(ctx context.Context, c store.Change) error {
	op := "change " + c.Token
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	items := make([]types.TransactWriteItem, len(c.Ops))
	for i, o := range c.Ops {
		ex, err := expression(o.Cond)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		text, names, values, allOld := ex.parts()
		if o.IsCheck() {
			items[i].ConditionCheck = &types.ConditionCheck{TableName: &s.table, Key: key(o.Check), ConditionExpression: text,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}
			continue
		}
		if o.Put == nil {
			items[i].Delete = &types.Delete{TableName: &s.table, Key: key(o.Delete), ConditionExpression: text,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}
			continue
		}
		av, err := marshal(store.Normalize(o.Put))
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		items[i].Put = &types.Put{TableName: &s.table, Item: av, ConditionExpression: text,
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: allOld}
	}
	var tries attempts
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:      items,
		ClientRequestToken: aws.String(c.Token),
	}, tries.option)
	if err == nil {
		return nil
	}
	if tries.n.Load() == 0 && ctx.Err() != nil {
		return fmt.Errorf("%s: %w: %w", op, store.ErrNotSent, ctx.Err())
	}
	if tries.sent.Load() == 0 {
		// No attempt reached a connection: nothing can have landed.
		return fmt.Errorf("%w: %w", store.ErrNotSent, s.classifyTx(ctx, op, c, err))
	}
	return s.classifyTx(ctx, op, c, err)
}

// classifyTx turns a TransactWriteItems failure into the store's classes:
// refused conditions are a *store.TxConflictError; a transaction canceled
// for capacity or a concurrent transaction on one of its items wrote
// nothing and may be retried (ErrThrottled); a token still in flight is
// unanswered (ErrUnavailable), settled like a lost answer.
func (s *Store) classifyTx(ctx context.Context, op string, c store.Change, err error) error {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		var conflict store.TxConflictError
		busy, invalid := "", ""
		for i, r := range tce.CancellationReasons {
			code := aws.ToString(r.Code)
			switch code {
			case "", "None":
				continue
			case "ConditionalCheckFailed":
				ce := store.ConditionError{}
				if i < len(c.Ops) {
					ce.PK = c.Ops[i].PK()
				}
				if len(r.Item) > 0 {
					if cur, uerr := unmarshal(r.Item); uerr == nil {
						ce.Current = cur
					}
				}
				conflict.Conflicts = append(conflict.Conflicts, ce)
			case "ValidationError":
				invalid = aws.ToString(r.Message)
			default:
				busy = code
			}
		}
		switch {
		case invalid != "":
			return fmt.Errorf("%s: %s refused it: %s: %w", op, s.Describe(), invalid, store.ErrInvalidItem)
		case len(conflict.Conflicts) > 0:
			return &conflict
		case busy != "":
			return fmt.Errorf("%s: %s canceled it (%s); nothing was written, try again: %w: %w", op, s.Describe(), busy, store.ErrThrottled, err)
		}
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "TransactionInProgressException":
			return fmt.Errorf("%s: %s is still applying an earlier send of it: %w: %w", op, s.Describe(), store.ErrUnavailable, err)
		case "IdempotentParameterMismatchException":
			return fmt.Errorf("%s: %s holds another change under its token: %w: %w", op, s.Describe(), store.ErrInvalidItem, err)
		case "UnknownOperationException":
			return fmt.Errorf("%s: %s does not serve TransactWriteItems, which koshactl writes every change with: "+
				"point the context at DynamoDB, DynamoDB Local, LocalStack or moto: %w", op, s.Describe(), err)
		}
	}
	return s.classify(ctx, op, "", err)
}
