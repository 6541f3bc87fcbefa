// Package snsfake is an Amazon SNS fake for tests: an httptest server on
// 127.0.0.1 that speaks the Query protocol the SDK's SNS client uses and
// answers Publish with the service's documented rules enforced, so a real
// *sns.Client can be pointed at it:
//
//   - the topic must exist (NotFound otherwise);
//   - Message must be non-empty UTF-8, and the message plus every
//     attribute's name, type and value at most 256 KB (262,144 bytes);
//   - Subject, when given: printable ASCII, no line breaks or control
//     characters, fewer than 100 characters;
//   - message attributes: at most 10; names 1-256 characters of A-Z a-z
//     0-9 _ - . , not starting or ending with '.', no "..", not starting
//     with "AWS." or "Amazon." (any case), unique; data type String,
//     String.Array, Number or Binary (optionally with a ".custom" suffix),
//     at most 256 bytes; a non-empty value.
//
// A refused request answers 400 with the Query protocol's ErrorResponse and
// is not recorded. Tests only.
package snsfake
