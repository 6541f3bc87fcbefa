// Package config reads and writes koshactl's configuration file: named
// contexts, each naming a store (a DynamoDB table or the embedded local store),
// its known dependencies, chaos key and metrics sources, limits, and whether it
// is protected.
//
// The file lives at $KOSHACTL_CONFIG, else $XDG_CONFIG_HOME/koshactl/config.yaml
// (os.UserConfigDir). With no file at all koshactl runs on the built-in "local"
// context, whose embedded store lives under the XDG state directory. Writes are
// atomic (temporary file and rename) and refuse to overwrite a file changed by
// someone else since it was read.
package config
