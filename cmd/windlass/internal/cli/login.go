package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// login asks the API for a session token and keeps it in the config file.
func (c *cli) login(ctx context.Context, args []string) error {
	f := c.flags("login", "")
	user := f.String("username", "", "account name (prompted for on a terminal)")
	pwStdin := f.Bool("password-stdin", false, "read the password from stdin (without echo on a terminal)")
	sso := f.Bool("sso", false, "log in through single sign-on: open the printed URL in a browser (the device flow)")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	if *sso {
		if *user != "" || *pwStdin {
			return f.usageError("--sso takes no --username or --password-stdin")
		}
		return c.loginSSO(ctx, s)
	}
	if *user == "" {
		if !c.terminal(c.stdin) || *pwStdin {
			return f.usageError("--username is required when stdin is not a terminal or carries the password")
		}
		if *user, err = c.prompt("Username: "); err != nil {
			return err
		}
	}
	if !*pwStdin && !c.terminal(c.stdin) {
		return f.usageError("give --password-stdin, or run on a terminal to be asked for the password")
	}
	password, err := c.readSecret("Password: ")
	if err != nil {
		return err
	}
	if password == "" {
		return f.usageError("the password is empty")
	}
	s.api.token = "" // a login sends no token
	var answer sessionAnswer
	body := map[string]string{"username": *user, "password": password}
	if _, err := s.api.json(ctx, http.MethodPost, "/api/v1/session", nil, body, &answer); err != nil {
		if ae := (*apiError)(nil); errors.As(err, &ae) {
			ae.noHint = true
		}
		return fmt.Errorf("log in to %s as %s: %w", s.api.base, *user, err)
	}
	return c.keepSession(s, *user, answer)
}

// sessionAnswer is the API's answer to a login.
type sessionAnswer struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// keepSession writes the session of user to the config file and says so.
func (c *cli) keepSession(s *session, user string, answer sessionAnswer) error {
	if answer.Token == "" {
		return fmt.Errorf("log in to %s: the answer holds no token", s.api.base)
	}
	cfg := clientConfig{Server: s.api.base, Username: user, Token: answer.Token}
	if err := saveConfig(s.configPath, cfg); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Logged in to %s as %s", s.api.base, user)
	if !answer.ExpiresAt.IsZero() {
		fmt.Fprintf(c.stdout, " (the session expires %s)", fmtTime(answer.ExpiresAt))
	}
	fmt.Fprintf(c.stdout, ".\nThe token is in %s.\n", s.configPath)
	return nil
}

// logout revokes the config file's token and removes it from the file.
func (c *cli) logout(ctx context.Context, args []string) error {
	f := c.flags("logout", "")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	if s.cfg.Token == "" || normalizeServer(s.cfg.Server) != s.api.base {
		fmt.Fprintf(c.stdout, "Not logged in to %s.\n", s.api.base)
		return nil
	}
	s.api.token = s.cfg.Token
	_, revokeErr := s.api.json(ctx, http.MethodDelete, "/api/v1/session", nil, nil, nil)
	var ae *apiError
	if errors.As(revokeErr, &ae) && ae.Status == http.StatusUnauthorized {
		revokeErr = nil // the token is no longer valid anyway
	}
	s.cfg.Token = ""
	if err := saveConfig(s.configPath, s.cfg); err != nil {
		return err
	}
	if revokeErr != nil {
		return fmt.Errorf("the token is removed from %s, but %s could not revoke it: %w", s.configPath, s.api.base, revokeErr)
	}
	fmt.Fprintf(c.stdout, "Logged out from %s.\n", s.api.base)
	return nil
}
