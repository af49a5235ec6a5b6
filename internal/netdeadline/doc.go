// Package netdeadline bounds how long a network peer may stay silent.
//
// A Dialer's connections fail a dial, and any read or write after it, that
// makes no progress for the timeout, with a *TimeoutError that names the
// operation, the address and the timeout. The bound is on silence, not on
// the whole transfer: a large download that keeps moving is never cut off,
// however long it takes; the caller's context bounds the total. Transport
// is an HTTP transport whose connections are so bounded (Git over HTTP(S),
// Helm chart repositories, OCI registries); the TLS handshake goes over
// the bounded connection too.
//
// The timeout is the Dialer's (0: DefaultTimeout) unless the dial's
// context carries one (WithTimeout): so one shared transport serves
// callers with different timeouts. A kept-alive connection keeps the
// timeout it was dialled with.
package netdeadline
