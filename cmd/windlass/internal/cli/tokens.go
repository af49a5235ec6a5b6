package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/windlass-cd/windlass/internal/appspec"
)

// API tokens of accounts and project roles: the same three calls under
// different paths.

// tokenFlags are the flags of create-token and generate-token.
type tokenFlags struct {
	expiresIn   *durationText
	description *string
}

func (f *flags) withToken() tokenFlags {
	t := tokenFlags{expiresIn: new(durationText("720h")), description: f.String("description", "", "what the token is for")}
	f.Var(t.expiresIn, "expires-in", "the token's lifetime, e.g. 720h")
	return t
}

// durationText is a flag holding a positive duration as it was written,
// in the syntax the API reads (appspec.ParseDuration).
type durationText string

func (d *durationText) String() string { return string(*d) }

func (d *durationText) Set(s string) error {
	if v, err := appspec.ParseDuration(s); err != nil || v <= 0 {
		return fmt.Errorf("%q is not a positive duration such as 720h", s)
	}
	*d = durationText(s)
	return nil
}

// createToken mints a token at path (…/tokens) and prints it once, alone
// on stdout; its ID and expiry go to stderr.
func (c *cli) createToken(ctx context.Context, f *flags, s *session, path, subject string, t tokenFlags) error {
	body := map[string]string{"expiresIn": string(*t.expiresIn)}
	if *t.description != "" {
		body["description"] = *t.description
	}
	var tok struct {
		Token     string    `json:"token"`
		ID        string    `json:"id"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	raw, err := s.api.json(ctx, http.MethodPost, path, nil, body, &tok)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		fmt.Fprintln(w, tok.Token)
		expires := "never"
		if !tok.ExpiresAt.IsZero() {
			expires = fmtTime(tok.ExpiresAt)
		}
		fmt.Fprintf(c.stderr, "token %s for %s, expires %s; it is shown only this once\n", tok.ID, subject, expires)
	})
}

// tokenInfo is an API token as the API lists it: without the token.
type tokenInfo struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	IssuedAt    time.Time `json:"issuedAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// listTokens lists the tokens at path; the answer holds no token.
func (c *cli) listTokens(ctx context.Context, f *flags, s *session, path string) error {
	return printList(ctx, f, s, path, "ID\tDESCRIPTION\tISSUED\tEXPIRES", func(t tokenInfo) []string {
		return []string{t.ID, t.Description, fmtTime(t.IssuedAt), orDash(fmtTime(t.ExpiresAt))}
	})
}

// deleteToken deletes the token id at path (…/tokens).
func (c *cli) deleteToken(ctx context.Context, s *session, path, id string) error {
	if _, err := s.api.json(ctx, http.MethodDelete, path+"/"+url.PathEscape(id), nil, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "token %s deleted\n", id)
	return nil
}
