// Package ghapp turns a GitHub App's credential (app ID, installation ID
// and RSA private key) into installation access tokens: it signs an
// RS256 JWT with the key and exchanges it at the API's
// /app/installations/{id}/access_tokens. Tokens are cached per API base,
// app, installation and key in the process, refreshed some minutes before
// they expire, and concurrent refreshes of one token share one request.
//
// Only activities and the API's connection test call it: the key and the
// tokens never enter a workflow input, result, log or response. Errors
// name the app and the installation, never the key or a token.
package ghapp
