package notifications

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Service is one configured destination service. Exactly one of the
// type's fields is set. String fields may hold "$key" references to the
// notifications secret, resolved at delivery (Expand).
type Service struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Webhook *WebhookService `json:"webhook,omitempty"`
	Slack   *SlackService   `json:"slack,omitempty"`
	Email   *EmailService   `json:"email,omitempty"`
	GitHub  *GitHubService  `json:"github,omitempty"`
	Teams   *TeamsService   `json:"teams,omitempty"`
}

// WebhookService posts to any HTTP endpoint.
type WebhookService struct {
	URL       string     `json:"url"`
	Headers   []Header   `json:"headers,omitempty"`
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`
	// BearerToken sets "Authorization: Bearer <token>".
	BearerToken        string `json:"bearerToken,omitempty"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
}

// Header is one HTTP header.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// BasicAuth is an HTTP basic credential.
type BasicAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// SlackService posts to Slack with chat.postMessage (Token) or to an
// incoming webhook (WebhookURL).
type SlackService struct {
	Token      string `json:"token,omitempty"`
	WebhookURL string `json:"webhookURL,omitempty"`
	// APIURL is Slack's API base (default https://slack.com/api/).
	APIURL   string `json:"apiURL,omitempty"`
	Username string `json:"username,omitempty"`
	Icon     string `json:"icon,omitempty"`
}

// EmailService sends mail over SMTP, with STARTTLS when the server offers
// it (and always when a password is set).
type EmailService struct {
	Host               string `json:"host"`
	Port               int    `json:"port"`
	From               string `json:"from"`
	Username           string `json:"username,omitempty"`
	Password           string `json:"password,omitempty"`
	HTML               bool   `json:"html,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// GitHubService sets commit statuses and creates deployments with a
// token, or as a GitHub App (Argo CD's appID, installationID and
// privateKey) with installation tokens.
type GitHubService struct {
	// APIURL is the API base (default https://api.github.com; GitHub
	// Enterprise's is https://host/api/v3). EnterpriseBaseURL is Argo
	// CD's name for it.
	APIURL            string `json:"apiURL,omitempty"`
	EnterpriseBaseURL string `json:"enterpriseBaseURL,omitempty"`
	Token             string `json:"token,omitempty"`
	AppID             ID     `json:"appID,omitempty"`
	InstallationID    ID     `json:"installationID,omitempty"`
	// PrivateKey is a $reference to the app's PEM key in the
	// notifications secret.
	PrivateKey string `json:"privateKey,omitempty"`
}

// API is the service's API base, "" for github.com.
func (g *GitHubService) API() string {
	if g.APIURL != "" {
		return g.APIURL
	}
	return g.EnterpriseBaseURL
}

// ID is a number that a configuration may give as a number or a
// string, as Argo CD's do.
type ID int64

// UnmarshalJSON reads 12 or "12".
func (i *ID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*i = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*i = ID(n)
	return nil
}

// TeamsService posts to Microsoft Teams workflow webhooks, one URL per
// recipient name.
type TeamsService struct {
	RecipientURLs map[string]string `json:"recipientUrls"`
}

// refPattern matches a "$key" or "${key}" reference.
var refPattern = regexp.MustCompile(`\$\{[A-Za-z0-9._-]+\}|\$[A-Za-z0-9._-]+`)

// Refs returns the secret keys a value refers to.
func Refs(v string) []string {
	var out []string
	for _, m := range refPattern.FindAllString(v, -1) {
		out = append(out, strings.Trim(m, "${}"))
	}
	return out
}

// Expand replaces each reference in v with the key's value.
func Expand(v string, secret map[string][]byte) (string, error) {
	var missing []string
	out := refPattern.ReplaceAllStringFunc(v, func(m string) string {
		k := strings.Trim(m, "${}")
		s, ok := secret[k]
		if !ok {
			missing = append(missing, k)
		}
		return string(s)
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("the notifications secret has no key %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// mustRef refuses a literal credential: it would be stored in the
// configuration, which the API serves.
func mustRef(field, v string) error {
	if v != "" && len(Refs(v)) == 0 {
		return fmt.Errorf("%s must be a $reference to a key of the notifications secret, not a literal", field)
	}
	return nil
}

func checkURL(field, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required", field)
	}
	if len(Refs(v)) > 0 {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q is not an http(s) URL", field, v)
	}
	return nil
}

func (c *Config) addService(key, v string) error {
	rest := strings.TrimPrefix(key, "service.")
	typ, name, named := strings.Cut(rest, ".")
	if !named {
		name = typ
	}
	if typ == "teams-workflows" {
		typ = TypeTeams
	}
	if !slices.Contains(serviceTypes, typ) {
		return fmt.Errorf("the %s service is not supported (supported: %s)", typ, strings.Join(serviceTypes, ", "))
	}
	if _, dup := c.Services[name]; dup {
		return fmt.Errorf("a service named %s is already defined", name)
	}
	s := Service{Name: name, Type: typ}
	var err error
	switch typ {
	case TypeWebhook:
		s.Webhook = &WebhookService{}
		if err = yaml.UnmarshalStrict([]byte(v), s.Webhook); err == nil {
			err = s.Webhook.validate()
		}
	case TypeSlack:
		s.Slack = &SlackService{}
		if err = yaml.UnmarshalStrict([]byte(v), s.Slack); err == nil {
			err = s.Slack.validate()
		}
	case TypeEmail:
		s.Email = &EmailService{}
		if err = yaml.UnmarshalStrict([]byte(v), s.Email); err == nil {
			err = s.Email.validate()
		}
	case TypeGitHub:
		s.GitHub = &GitHubService{}
		if err = yaml.UnmarshalStrict([]byte(v), s.GitHub); err == nil {
			err = s.GitHub.validate()
		}
	case TypeTeams:
		s.Teams = &TeamsService{}
		if err = yaml.UnmarshalStrict([]byte(v), s.Teams); err == nil {
			err = s.Teams.validate()
		}
	}
	if err != nil {
		return err
	}
	c.Services[name] = s
	return nil
}

func (w *WebhookService) validate() error {
	errs := []error{checkURL("url", w.URL)}
	for _, h := range w.Headers {
		if h.Name == "" {
			errs = append(errs, errors.New("a header has no name"))
		}
		if strings.EqualFold(h.Name, "Authorization") {
			errs = append(errs, mustRef("header Authorization", h.Value))
		}
	}
	if w.BasicAuth != nil {
		errs = append(errs, mustRef("basicAuth.password", w.BasicAuth.Password))
	}
	errs = append(errs, mustRef("bearerToken", w.BearerToken))
	return errors.Join(errs...)
}

func (s *SlackService) validate() error {
	if s.Token == "" && s.WebhookURL == "" {
		return errors.New("set token (chat.postMessage) or webhookURL (incoming webhook)")
	}
	errs := []error{mustRef("token", s.Token), mustRef("webhookURL", s.WebhookURL)}
	if s.APIURL != "" {
		errs = append(errs, checkURL("apiURL", s.APIURL))
	}
	return errors.Join(errs...)
}

func (e *EmailService) validate() error {
	var errs []error
	if e.Host == "" {
		errs = append(errs, errors.New("host is required"))
	}
	if e.Port <= 0 || e.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is not a TCP port", e.Port))
	}
	if e.From == "" {
		errs = append(errs, errors.New("from is required"))
	}
	errs = append(errs, mustRef("password", e.Password))
	return errors.Join(errs...)
}

func (g *GitHubService) validate() error {
	errs := []error{mustRef("token", g.Token), mustRef("privateKey", g.PrivateKey)}
	app := g.AppID != 0 || g.InstallationID != 0 || g.PrivateKey != ""
	switch {
	case g.Token != "" && app:
		errs = append(errs, errors.New("set a token or a GitHub App (appID, installationID, privateKey), not both"))
	case app && (g.AppID <= 0 || g.InstallationID <= 0 || g.PrivateKey == ""):
		errs = append(errs, errors.New("a GitHub App needs appID, installationID and privateKey"))
	case !app && g.Token == "":
		errs = append(errs, errors.New("token, or a GitHub App's appID, installationID and privateKey, is required"))
	}
	switch {
	case g.APIURL != "" && g.EnterpriseBaseURL != "":
		errs = append(errs, errors.New("set apiURL or enterpriseBaseURL, not both"))
	case g.APIURL != "":
		errs = append(errs, checkURL("apiURL", g.APIURL))
	case g.EnterpriseBaseURL != "":
		errs = append(errs, checkURL("enterpriseBaseURL", g.EnterpriseBaseURL))
	}
	return errors.Join(errs...)
}

func (t *TeamsService) validate() error {
	if len(t.RecipientURLs) == 0 {
		return errors.New("recipientUrls is required")
	}
	var errs []error
	for _, k := range sortedKeys(t.RecipientURLs) {
		errs = append(errs, mustRef("recipientUrls."+k, t.RecipientURLs[k]))
	}
	return errors.Join(errs...)
}
