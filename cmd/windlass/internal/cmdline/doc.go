// Package cmdline holds what every windlass command shares on its command
// line: the usage error, the exit codes that errors map to, and the
// repeatable string flag.
package cmdline
