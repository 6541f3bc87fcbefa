// Package nofollow provides koshactl's one rule for redirects of the HTTP
// clients that carry a secret or judge an answer (notification webhooks,
// gauge scrapes): a redirect is never followed, so an answer can neither
// send the request somewhere else nor stand in another server's answer;
// the 3xx response is the answer, and the caller says what to fix.
package nofollow
