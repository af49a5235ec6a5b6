// Package notify delivers notifications. Evaluate decides, from the
// configuration, which deliveries an app's state calls for; Deliver sends
// one of them to its service (webhook, Slack, email over SMTP, GitHub,
// Microsoft Teams), resolving the service's credentials from the secret
// store at that moment, so that no credential enters a workflow's input,
// result or history.
//
// Each delivery carries an idempotency key: webhooks receive it as the
// Idempotency-Key header and mail as its Message-ID, so a receiver can
// drop a repeat that a retry after a worker's death would send.
package notify
