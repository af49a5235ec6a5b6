// Package failure marks errors that retrying cannot fix. A sentinel made by
// Permanent carries a constant error type; Activity turns any error whose
// chain holds such a sentinel into a non-retryable Temporal application
// error of that type, so that workflows fail fast and can branch on the type.
// A sentinel made by Transient stays retryable and keeps its type.
package failure
