package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

var accountVerbs = []verb{
	{"list", "", "list the local accounts", (*cli).accountList},
	{"get-user-info", "", "show whom the token in use belongs to", (*cli).accountUserInfo},
	{"update-password", "", "change your password, or as admin another account's (--account)", (*cli).accountUpdatePassword},
	{"generate-token", "", "mint an API token for an account with the apiKey capability (printed once)", (*cli).accountGenerateToken},
	{"list-tokens", "", "list an account's API tokens", (*cli).accountListTokens},
	{"delete-token", "ID", "delete one of an account's API tokens", (*cli).accountDeleteToken},
	{"can-i", "ACTION RESOURCE SUBRESOURCE", "whether you may, e.g. can-i sync applications 'default/*'", (*cli).accountCanI},
}

// account is a local account as the API lists it.
type account struct {
	Name         string   `json:"name"`
	Enabled      bool     `json:"enabled"`
	Capabilities []string `json:"capabilities"`
}

type userInfo struct {
	Name      string    `json:"name"`
	Groups    []string  `json:"groups"`
	Kind      string    `json:"kind"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (c *cli) accountList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "account list", "/api/v1/accounts", "NAME\tENABLED\tCAPABILITIES", func(a account) []string {
		return []string{a.Name, yesNo(a.Enabled), strings.Join(a.Capabilities, ",")}
	})
}

func (c *cli) accountUserInfo(ctx context.Context, args []string) error {
	f := c.flags("account get-user-info", "").withOutput()
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	var u userInfo
	raw, err := s.api.json(ctx, http.MethodGet, "/api/v1/session/userinfo", nil, nil, &u)
	if err != nil {
		return err
	}
	return f.print(raw, func(w io.Writer) {
		details(w, "Name", u.Name, "Groups", strings.Join(u.Groups, ", "), "Kind", u.Kind, "Expires", fmtTime(u.ExpiresAt))
	})
}

func (c *cli) accountUpdatePassword(ctx context.Context, args []string) error {
	f := c.flags("account update-password", "")
	account := f.String("account", "", "the account whose password to change (default: yours; others need admin)")
	_, s, err := f.start(args, 0)
	if err != nil {
		return err
	}
	current, err := c.readSecret("Your current password: ")
	if err != nil {
		return err
	}
	next, err := c.readSecret("New password: ")
	if err != nil {
		return err
	}
	if c.terminal(c.stdin) {
		again, err := c.readSecret("New password again: ")
		if err != nil {
			return err
		}
		if again != next {
			return errors.New("the new passwords differ; the password is unchanged")
		}
	}
	if current == "" || next == "" {
		return f.usageError("the passwords must not be empty (stdin: the current password, then the new one, a line each)")
	}
	body := map[string]string{"currentPassword": current, "newPassword": next}
	if *account != "" {
		body["name"] = *account
	}
	if _, err := s.api.json(ctx, http.MethodPut, "/api/v1/account/password", nil, body, nil); err != nil {
		return err
	}
	who := "your"
	if *account != "" {
		who = *account + "'s"
	}
	fmt.Fprintf(c.stdout, "%s password is updated\n", who)
	return nil
}

// accountTokens parses the flags of the account token verbs and returns
// --account, by default the token's owner.
func (c *cli) accountTokens(ctx context.Context, f *flags, args []string, n int) ([]string, *session, string, error) {
	account := f.String("account", "", "the account (default: the one logged in)")
	pos, s, err := f.start(args, n)
	if err != nil {
		return nil, nil, "", err
	}
	if *account == "" {
		var u userInfo
		if _, err := s.api.json(ctx, http.MethodGet, "/api/v1/session/userinfo", nil, nil, &u); err != nil {
			return nil, nil, "", fmt.Errorf("find the account logged in (or give --account): %w", err)
		}
		*account = u.Name
	}
	return pos, s, *account, nil
}

func tokensPath(account string) string {
	return "/api/v1/accounts/" + url.PathEscape(account) + "/tokens"
}

func (c *cli) accountGenerateToken(ctx context.Context, args []string) error {
	f := c.flags("account generate-token", "").withOutput()
	t := f.withToken()
	_, s, account, err := c.accountTokens(ctx, f, args, 0)
	if err != nil {
		return err
	}
	return c.createToken(ctx, f, s, tokensPath(account), account, t)
}

func (c *cli) accountListTokens(ctx context.Context, args []string) error {
	f := c.flags("account list-tokens", "").withOutput()
	_, s, account, err := c.accountTokens(ctx, f, args, 0)
	if err != nil {
		return err
	}
	return c.listTokens(ctx, f, s, tokensPath(account))
}

func (c *cli) accountDeleteToken(ctx context.Context, args []string) error {
	f := c.flags("account delete-token", "ID")
	pos, s, account, err := c.accountTokens(ctx, f, args, 1)
	if err != nil {
		return err
	}
	return c.deleteToken(ctx, s, tokensPath(account), pos[0])
}

// canI answers GET /session/can.
type canI struct {
	Results []struct {
		Allowed bool `json:"allowed"`
	} `json:"results"`
}

// accountCanI asks whether the caller may do ACTION on RESOURCE's object
// (SUBRESOURCE): prints yes or no, as argocd account can-i.
func (c *cli) accountCanI(ctx context.Context, args []string) error {
	f := c.flags("account can-i", "ACTION RESOURCE SUBRESOURCE").withOutput()
	pos, s, err := f.start(args, 3)
	if err != nil {
		return err
	}
	q := url.Values{"check": {pos[1] + "," + pos[0] + "," + pos[2]}}
	var ans canI
	raw, err := s.api.json(ctx, http.MethodGet, "/api/v1/session/can", q, nil, &ans)
	if err != nil {
		return err
	}
	if len(ans.Results) != 1 {
		return fmt.Errorf("GET /api/v1/session/can: %d answers to one check", len(ans.Results))
	}
	return f.print(raw, func(w io.Writer) { fmt.Fprintln(w, yesNo(ans.Results[0].Allowed)) })
}
