// Package sandboxtest is the in-process sandbox fleet the end-to-end
// tests run koshactl against (see [Start]).
package sandboxtest
