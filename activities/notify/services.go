package notify

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/smtp"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-cd/windlass/internal/ghapp"
	"github.com/windlass-cd/windlass/internal/notifications"
)

// IdempotencyHeader carries a delivery's key to HTTP receivers.
const IdempotencyHeader = "Idempotency-Key"

func (a *Activities) sendWebhook(ctx context.Context, s *notifications.WebhookService, m message) error {
	wt, ok := m.t.Webhook[m.d.Service]
	if !ok {
		return permanent("template %s has no webhook.%s", m.d.Template, m.d.Service)
	}
	base, err := m.expand(s.URL)
	if err != nil {
		return permanent("%w", err)
	}
	method := wt.Method
	if method == "" {
		method = http.MethodGet
		if wt.Body != "" {
			method = http.MethodPost
		}
	}
	hdr := http.Header{IdempotencyHeader: {m.d.Key}}
	for _, h := range s.Headers {
		v, err := m.expand(h.Value)
		if err != nil {
			return permanent("header %s: %w", h.Name, err)
		}
		hdr.Add(h.Name, v)
	}
	if s.BearerToken != "" {
		tok, err := m.expand(s.BearerToken)
		if err != nil {
			return permanent("bearerToken: %w", err)
		}
		hdr.Set("Authorization", "Bearer "+tok)
	}
	if ba := s.BasicAuth; ba != nil {
		user, err1 := m.expand(ba.Username)
		pass, err2 := m.expand(ba.Password)
		if err1 != nil || err2 != nil {
			return permanent("basicAuth: the notifications secret lacks a key")
		}
		r := &http.Request{Header: hdr}
		r.SetBasicAuth(user, pass)
	}
	_, err = httpDo(ctx, client(a.http, s.InsecureSkipVerify), method, strings.TrimSuffix(base, "/")+wt.Path, []byte(wt.Body), hdr)
	return err
}

func (a *Activities) sendSlack(ctx context.Context, s *notifications.SlackService, m message) error {
	body := map[string]any{"text": m.t.Message}
	if st := m.t.Slack; st != nil {
		att, err := rawJSON("slack.attachments", st.Attachments)
		if err != nil {
			return err
		}
		blocks, err := rawJSON("slack.blocks", st.Blocks)
		if err != nil {
			return err
		}
		if att != nil {
			body["attachments"] = att
		}
		if blocks != nil {
			body["blocks"] = blocks
		}
	}
	if s.Username != "" {
		body["username"] = s.Username
	}
	if s.Icon != "" {
		key := "icon_emoji"
		if strings.HasPrefix(s.Icon, "http") {
			key = "icon_url"
		}
		body[key] = s.Icon
	}
	if s.Token == "" { // incoming webhook: the channel is the webhook's
		u, err := m.expand(s.WebhookURL)
		if err != nil {
			return permanent("webhookURL: %w", err)
		}
		b, _ := json.Marshal(body)
		_, err = httpDo(ctx, a.http, http.MethodPost, u, b, jsonHeader())
		return err
	}
	tok, err := m.expand(s.Token)
	if err != nil {
		return permanent("token: %w", err)
	}
	body["channel"] = m.d.Recipient
	api := s.APIURL
	if api == "" {
		api = "https://slack.com/api/"
	}
	hdr := jsonHeader()
	hdr.Set("Authorization", "Bearer "+tok)
	b, _ := json.Marshal(body)
	out, err := httpDo(ctx, a.http, http.MethodPost, strings.TrimSuffix(api, "/")+"/chat.postMessage", b, hdr)
	if err != nil {
		return err
	}
	var resp struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return fmt.Errorf("chat.postMessage: unreadable answer: %w", err)
	}
	if !resp.OK {
		if resp.Error == "ratelimited" {
			return fmt.Errorf("chat.postMessage: %s", resp.Error)
		}
		return permanent("chat.postMessage: %s", resp.Error)
	}
	return nil
}

func (a *Activities) sendTeams(ctx context.Context, s *notifications.TeamsService, m message) error {
	ref, ok := s.RecipientURLs[m.d.Recipient]
	if !ok {
		return permanent("teams service %s has no recipient %q", m.d.Service, m.d.Recipient)
	}
	u, err := m.expand(ref)
	if err != nil {
		return permanent("recipientUrls.%s: %w", m.d.Recipient, err)
	}
	body := []map[string]any{}
	title := m.t.Title
	if m.t.Teams != nil && m.t.Teams.Title != "" {
		title = m.t.Teams.Title
	}
	if title != "" {
		body = append(body, map[string]any{"type": "TextBlock", "text": title, "weight": "Bolder", "size": "Medium", "wrap": true})
	}
	body = append(body, map[string]any{"type": "TextBlock", "text": m.t.Message, "wrap": true})
	if m.t.Teams != nil {
		raw, err := rawJSON("teams.facts", m.t.Teams.Facts)
		if err != nil {
			return err
		}
		if raw != nil {
			var facts []struct{ Name, Value string }
			if err := json.Unmarshal(raw, &facts); err != nil {
				return permanent("teams.facts: want a list of {name, value}: %w", err)
			}
			fs := make([]map[string]string, 0, len(facts))
			for _, f := range facts {
				fs = append(fs, map[string]string{"title": f.Name, "value": f.Value})
			}
			body = append(body, map[string]any{"type": "FactSet", "facts": fs})
		}
	}
	card := map[string]any{
		"type": "message",
		"attachments": []any{map[string]any{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard", "version": "1.4", "body": body,
			},
		}},
	}
	b, _ := json.Marshal(card)
	_, err = httpDo(ctx, a.http, http.MethodPost, u, b, jsonHeader())
	return err
}

func (a *Activities) sendGitHub(ctx context.Context, s *notifications.GitHubService, m message) error {
	gt := m.t.GitHub
	if gt == nil || (gt.Status == nil && gt.Deployment == nil) {
		return permanent("template %s has no github.status or github.deployment", m.d.Template)
	}
	tok, err := a.githubToken(ctx, s, m)
	if err != nil {
		return err
	}
	repoURL := m.app.RepoURL
	if gt.RepoURLPath != "" {
		repoURL = gt.RepoURLPath
	}
	sha := m.app.Revision
	if m.app.Operation != nil && m.app.Operation.Revision != "" {
		sha = m.app.Operation.Revision
	}
	if gt.RevisionPath != "" {
		sha = gt.RevisionPath
	}
	repo := fullName(repoURL)
	if repo == "" || sha == "" {
		return permanent("github: no repository (%q) or revision (%q)", repoURL, sha)
	}
	api := s.API()
	if api == "" {
		api = ghapp.DefaultAPI
	}
	api = strings.TrimSuffix(api, "/") + "/repos/" + repo
	hdr := jsonHeader()
	hdr.Set("Authorization", "Bearer "+tok)
	hdr.Set("Accept", "application/vnd.github+json")
	post := func(path string, v any) ([]byte, error) {
		b, _ := json.Marshal(v)
		return httpDo(ctx, a.http, http.MethodPost, api+path, b, hdr)
	}
	if st := gt.Status; st != nil {
		label := st.Label
		if label == "" {
			label = "continuous-delivery/" + m.app.Name
		}
		_, err := post("/statuses/"+sha, map[string]any{
			"state": st.State, "context": label, "target_url": st.TargetURL, "description": truncate(m.t.Message, 140),
		})
		if err != nil {
			return err
		}
	}
	if dp := gt.Deployment; dp != nil {
		ref := dp.Reference
		if ref == "" {
			ref = sha
		}
		id, err := a.githubDeployment(ctx, api, hdr, ref, dp, m)
		if err != nil {
			return err
		}
		_, err = post("/deployments/"+strconv.FormatInt(id, 10)+"/statuses", map[string]any{
			"state": dp.State, "environment_url": dp.EnvironmentURL, "log_url": dp.LogURL, "description": truncate(m.t.Message, 140),
		})
		return err
	}
	return nil
}

// githubToken is the service's token, or an installation token of its
// GitHub App from the process's cache. A refused app key or a missing
// installation is permanent; an API that does not answer is retried.
func (a *Activities) githubToken(ctx context.Context, s *notifications.GitHubService, m message) (string, error) {
	if s.AppID == 0 {
		tok, err := m.expand(s.Token)
		if err != nil {
			return "", permanent("token: %w", err)
		}
		return tok, nil
	}
	key, err := m.expand(s.PrivateKey)
	if err != nil {
		return "", permanent("privateKey: %w", err)
	}
	app := ghapp.App{EnterpriseBaseURL: s.API(), AppID: int64(s.AppID), InstallationID: int64(s.InstallationID), PrivateKey: key}
	tok, err := a.apps.Token(ctx, app, a.http)
	switch {
	case ghapp.Refused(err):
		return "", permanent("github: %w", err)
	case err != nil:
		return "", fmt.Errorf("github: %w", err)
	}
	return tok, nil
}

// deploymentKeyField is the field of a deployment's payload that holds the
// delivery's idempotency key.
const deploymentKeyField = "windlassIdempotencyKey"

// githubDeployment returns the deployment of this delivery: the one an
// earlier attempt created (same ref, environment and idempotency key), or
// a new one. A retried delivery thus never creates a second deployment.
func (a *Activities) githubDeployment(ctx context.Context, api string, hdr http.Header, ref string, dp *notifications.GitHubDeployment, m message) (int64, error) {
	q := url.Values{"ref": {ref}, "per_page": {"100"}}
	if dp.Environment != "" {
		q.Set("environment", dp.Environment)
	}
	out, err := httpDo(ctx, a.http, http.MethodGet, api+"/deployments?"+q.Encode(), nil, hdr)
	if err != nil {
		return 0, err
	}
	var found []struct {
		ID      int64           `json:"id"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(out, &found); err != nil {
		return 0, fmt.Errorf("github: unreadable deployments list: %w", err)
	}
	for _, d := range found {
		var p map[string]any
		if json.Unmarshal(d.Payload, &p) == nil && p[deploymentKeyField] == m.d.Key && d.ID != 0 {
			return d.ID, nil
		}
	}
	req := map[string]any{
		"ref": ref, "environment": dp.Environment, "description": truncate(m.t.Message, 140),
		"required_contexts": dp.RequiredContexts, "auto_merge": dp.AutoMerge != nil && *dp.AutoMerge,
		"payload": map[string]string{deploymentKeyField: m.d.Key},
	}
	if dp.RequiredContexts == nil {
		req["required_contexts"] = []string{}
	}
	b, _ := json.Marshal(req)
	out, err = httpDo(ctx, a.http, http.MethodPost, api+"/deployments", b, hdr)
	if err != nil {
		return 0, err
	}
	var created struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(out, &created); err != nil || created.ID == 0 {
		return 0, errors.New("github: the deployment answer has no id")
	}
	return created.ID, nil
}

// fullName is "owner/repo" of a GitHub repository URL.
func fullName(u string) string {
	u = strings.TrimSuffix(strings.TrimSpace(u), ".git")
	if rest, ok := strings.CutPrefix(u, "git@"); ok {
		_, p, _ := strings.Cut(rest, ":")
		return p
	}
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	_, p, _ := strings.Cut(u, "/")
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1]
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// sendEmail sends one mail. It uses STARTTLS when the server offers it,
// and refuses to send a password over a connection without TLS.
func (a *Activities) sendEmail(ctx context.Context, s *notifications.EmailService, m message) error {
	if m.d.Recipient == "" {
		return permanent("email needs a recipient address")
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp %s: %w", addr, err)
	}
	defer c.Close()
	tlsOn := false
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: s.Host, InsecureSkipVerify: s.InsecureSkipVerify}); err != nil { //nolint:gosec // the service's own setting
			return fmt.Errorf("smtp %s: starttls: %w", addr, err)
		}
		tlsOn = true
	}
	if s.Password != "" {
		if !tlsOn {
			return permanent("smtp %s offers no STARTTLS: refusing to send the password in clear", addr)
		}
		user, err1 := m.expand(s.Username)
		pass, err2 := m.expand(s.Password)
		if err1 != nil || err2 != nil {
			return permanent("email: the notifications secret lacks the username or password key")
		}
		if err := c.Auth(smtp.PlainAuth("", user, pass, s.Host)); err != nil {
			return permanent("smtp %s: auth: %w", addr, err)
		}
	}
	if err := c.Mail(s.From); err != nil {
		return fmt.Errorf("smtp %s: MAIL FROM: %w", addr, err)
	}
	if err := c.Rcpt(m.d.Recipient); err != nil {
		return permanent("smtp %s: RCPT TO %s: %w", addr, m.d.Recipient, err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp %s: DATA: %w", addr, err)
	}
	subject := m.t.Title
	if m.t.Email != nil && m.t.Email.Subject != "" {
		subject = m.t.Email.Subject
	}
	ctype := "text/plain"
	if s.HTML {
		ctype = "text/html"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: <%s@windlass>\r\nMIME-Version: 1.0\r\nContent-Type: %s; charset=UTF-8\r\n\r\n",
		s.From, m.d.Recipient, oneLine(subject), m.d.Key, ctype)
	b.WriteString(strings.ReplaceAll(m.t.Message, "\n", "\r\n"))
	if _, err := w.Write([]byte(b.String())); err != nil {
		return fmt.Errorf("smtp %s: write: %w", addr, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp %s: end of DATA: %w", addr, err)
	}
	return c.Quit()
}

// oneLine keeps a header value on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
