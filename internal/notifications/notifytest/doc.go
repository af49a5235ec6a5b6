// Package notifytest runs real receivers on loopback for tests of
// notifications: an HTTP server that records every request (webhook,
// Slack, Teams and GitHub API formats) and an SMTP server with STARTTLS
// and PLAIN auth that records every message.
package notifytest
