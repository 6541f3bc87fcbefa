// Package notifytest is a local webhook receiver for notification tests: an
// httptest server on 127.0.0.1 that records every POST and answers as the
// test says (accept, refuse, or hang until the sender gives up). Tests only.
package notifytest
