// Package project holds the project activities: reading a project by name
// from the configured store, and judging its sync windows at a moment.
// Window evaluation is an activity rather than workflow code because it
// loads time zones; its verdict depends only on its input, so retries and
// replays agree.
package project
