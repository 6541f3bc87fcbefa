// Package faultproxy puts an HTTP proxy in front of a DynamoDB-API server
// (moto in tests) that loses answers on purpose: it forwards a request,
// lets the server apply it, and then resets the client's connection instead
// of answering, withholds the answer until the client gives up, or answers
// HTTP 500 in its place; or it stalls a request, never forwarded, until the
// client gives up; or it holds a request until the test releases it (to
// order two clients: a retry held while another change lands). Which
// request is hit is chosen by its DynamoDB operation (the X-Amz-Target
// header, for example "PutItem") and by count (the first, the second, ...),
// so a test can lose exactly the answer of one write and let the SDK's retry
// meet the write's own condition.
//
//	p := faultproxy.Start(t, endpoint)
//	p.Lose("PutItem", 1, faultproxy.Reset)   // the first PutItem's answer
//	... point the client at p.URL() ...
//	p.Wait(t, "PutItem", 1)                 // until it was applied and lost
//
// The proxy is a test helper: it listens on 127.0.0.1 on a free port and is
// closed when the test ends.
package faultproxy
