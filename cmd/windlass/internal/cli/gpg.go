package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/windlass-cd/windlass/internal/gpgkey"
)

var gpgVerbs = []verb{
	{"add", "", "add GPG public keys: --from FILE (- for stdin), ASCII-armored", (*cli).gpgAdd},
	{"list", "", "list the GPG keys projects may name in signatureKeys", (*cli).gpgList},
	{"rm", "KEYID", "remove a GPG key", (*cli).gpgRm},
}

// gpgKeyList is the API's GPGKeyList.
type gpgKeyList struct {
	Items []gpgkey.Key `json:"items"`
}

func (c *cli) gpgAdd(ctx context.Context, args []string) error {
	f := c.flags("gpg add", "").withOutput()
	from := f.String("from", "", "file of one or more ASCII-armored public keys (- for stdin)")
	upsert := f.Bool("upsert", false, "replace a key already stored")
	if _, s, err := f.start(args, 0); err != nil {
		return err
	} else if *from == "" {
		return f.usageError("--from is required")
	} else {
		var b []byte
		if *from == "-" {
			b, err = io.ReadAll(c.stdin)
		} else {
			b, err = os.ReadFile(*from)
		}
		if err != nil {
			return err
		}
		q := url.Values{}
		if *upsert {
			q.Set("upsert", "true")
		}
		var out gpgKeyList
		raw, err := s.api.json(ctx, http.MethodPost, "/api/v1/gpgkeys", q, map[string]string{"keyData": string(b)}, &out)
		if err != nil {
			return fmt.Errorf("add GPG keys: %w", err)
		}
		return f.print(raw, func(w io.Writer) {
			for _, k := range out.Items {
				fmt.Fprintf(w, "GPG key %s (%s) added\n", k.KeyID, orDash(k.Owner))
			}
		})
	}
}

func (c *cli) gpgList(ctx context.Context, args []string) error {
	return listVerb(ctx, c, args, "gpg list", "/api/v1/gpgkeys", "KEYID\tTYPE\tOWNER\tSUBKEYS", func(k gpgkey.Key) []string {
		return []string{k.KeyID, k.SubType, orDash(k.Owner), orDash(strings.Join(k.SubKeyIDs, ","))}
	})
}

func (c *cli) gpgRm(ctx context.Context, args []string) error {
	return c.remove(ctx, args, "gpg rm", "KEYID", "GPG key", "removed", func(id string) string {
		return "/api/v1/gpgkeys/" + url.PathEscape(id)
	})
}
