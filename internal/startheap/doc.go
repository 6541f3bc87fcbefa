// Package startheap lets a koshactl process's heap reach 8 MiB before its
// first garbage collection. It does its work in init, on purpose: the one
// package of koshactl that does, because what it guards against happens
// during package initialisation.
//
// The runtime starts its first collection when the heap nears 4 MiB.
// Package initialisation alone (the AWS SDK's schemas and endpoint tables,
// gojq, prometheus) allocates about 2.9 MiB, and the heap the runtime counts
// is larger than the bytes allocated, so every koshactl process, even
// `koshactl version`, started a collection before main ran and spent a fifth
// of its life marking a heap that was all live (docs/benchmarks/startup.md).
//
// Go runs package init in import-path order among the packages whose imports
// have run theirs, so this package, which imports only os, runtime and
// runtime/debug, runs after the AWS SDK's schemas (about 1.7 MiB) but before
// the rest, well under the runtime's first trigger (about 3 MiB allocated).
// cmd/koshactl imports it for its side effect; its TestPackageInitStaysLight
// fails when a collection starts during `koshactl version`.
package startheap
