package notifications

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFileImportsArgoCDConfig(t *testing.T) {
	c, err := ParseFile("testdata/argocd-notifications-cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, n := range sortedKeys(c.Services) {
		types = append(types, n+"="+c.Services[n].Type)
	}
	want := []string{"github=github", "hooks=webhook", "mail=email", "slack=slack", "teams=teams"}
	if d := cmp.Diff(want, types); d != "" {
		t.Errorf("services (-want +got):\n%s", d)
	}
	for _, n := range []string{"on-failure", TriggerCreated, TriggerDeleted, TriggerDeployed, TriggerHealthDegraded,
		TriggerSyncFailed, TriggerSyncRunning, TriggerSyncStatusUnknown, TriggerSyncSucceeded} {
		if _, ok := c.Triggers[n]; !ok {
			t.Errorf("trigger %s missing", n)
		}
	}
	if d := cmp.Diff([]string{TriggerSyncFailed}, c.DefaultTriggers); d != "" {
		t.Errorf("defaultTriggers (-want +got):\n%s", d)
	}
	if got := c.Context["argocdUrl"]; got != "https://cd.example.com" {
		t.Errorf("context argocdUrl = %q", got)
	}
}

// Each bad configuration is refused at Parse, with an error that names
// the key and the problem.
func TestParseRefusesBadInput(t *testing.T) {
	const hook = "url: http://127.0.0.1/x\n"
	over := make([]string, MaxRecipients+1)
	for i := range over {
		over[i] = fmt.Sprintf("hook:r%d", i)
	}
	tests := []struct {
		name string
		data map[string]string
		want []string
	}{
		{"template does not parse", map[string]string{"template.t": "message: '{{.app.metadata.name'"},
			[]string{"template.t: message does not parse", "unclosed action"}},
		{"template field does not parse", map[string]string{"service.webhook.hook": hook,
			"template.t": "message: ok\nwebhook:\n  hook:\n    body: '{{if}}'"},
			[]string{"template.t: webhook.hook.body does not parse"}},
		{"condition does not compile", map[string]string{"template.t": "message: x",
			"trigger.on-x": "- when: app.status.sync.status ==\n  send: [t]"},
			[]string{"trigger.on-x: [0].when does not compile"}},
		{"oncePer does not compile", map[string]string{"template.t": "message: x",
			"trigger.on-x": "- when: 'true'\n  oncePer: app.(\n  send: [t]"},
			[]string{"trigger.on-x: [0].oncePer does not compile"}},
		{"trigger sends an unknown template", map[string]string{"trigger.on-x": "- when: 'true'\n  send: [nope]"},
			[]string{`trigger.on-x: [0].send: unknown template "nope"`}},
		{"unknown service in a subscription", map[string]string{"subscriptions": "- recipients: [pager:ops]"},
			[]string{`subscriptions: [0].recipients: recipient "pager:ops": unknown service "pager"`}},
		{"unknown service in a template", map[string]string{"template.t": "webhook:\n  nope:\n    body: x"},
			[]string{`template.t: webhook.nope: unknown service "nope"`}},
		{"unknown service in defaultTriggers", map[string]string{"defaultTriggers.nope": "[on-created]"},
			[]string{`defaultTriggers.nope: unknown service "nope"`}},
		{"unsupported service type", map[string]string{"service.opsgenie": "apiKeys: {}"},
			[]string{"service.opsgenie: the opsgenie service is not supported"}},
		{"unsupported key", map[string]string{"trigger": "x", "notifications.x": "y"},
			[]string{"notifications.x: this key is not supported", "trigger: this key is not supported"}},
		{"unsupported field", map[string]string{"service.webhook.hook": hook + "retryWaitMax: 1s"},
			[]string{`service.webhook.hook: error unmarshaling JSON: while decoding JSON: json: unknown field "retryWaitMax"`}},
		{"recipients over the limit", map[string]string{"service.webhook.hook": hook,
			"subscriptions": "- recipients: [" + strings.Join(over, ", ") + "]"},
			[]string{fmt.Sprintf("subscriptions: [0].recipients: %d recipients, over the limit of %d", MaxRecipients+1, MaxRecipients)}},
		{"unknown trigger", map[string]string{"defaultTriggers": "[on-nothing]"},
			[]string{`defaultTriggers: unknown trigger "on-nothing"`}},
		{"literal token", map[string]string{"service.slack": "token: xoxb-123"},
			[]string{"service.slack: token must be a $reference"}},
		{"literal password", map[string]string{"service.email": "host: h\nport: 25\nfrom: a@b\npassword: hunter2"},
			[]string{"service.email: password must be a $reference"}},
		{"literal Authorization header", map[string]string{"service.webhook.hook": hook + "headers:\n- name: authorization\n  value: Bearer abc"},
			[]string{"service.webhook.hook: header Authorization must be a $reference"}},
		{"bad URL", map[string]string{"service.webhook.hook": "url: ftp://x"},
			[]string{`service.webhook.hook: url "ftp://x" is not an http(s) URL`}},
		{"github app without installation", map[string]string{"service.github": "appID: 1\nprivateKey: $key"},
			[]string{"service.github: a GitHub App needs appID, installationID and privateKey"}},
		{"github app literal key", map[string]string{"service.github": "appID: 1\ninstallationID: 2\nprivateKey: '-----BEGIN RSA PRIVATE KEY-----'"},
			[]string{"service.github: privateKey must be a $reference"}},
		{"github app and token", map[string]string{"service.github": "appID: 1\ninstallationID: 2\nprivateKey: $key\ntoken: $tok"},
			[]string{"service.github: set a token or a GitHub App"}},
		{"github app ID not a number", map[string]string{"service.github": "appID: one\ninstallationID: 2\nprivateKey: $key"},
			[]string{`service.github: error unmarshaling JSON: while decoding JSON: "one" is not a number`}},
		{"github without credentials", map[string]string{"service.github": "apiURL: https://ghe.example/api/v3"},
			[]string{"service.github: token, or a GitHub App's appID, installationID and privateKey, is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.data)
			if err == nil {
				t.Fatal("Parse accepted the configuration")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDecodeData(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"configmap", "kind: ConfigMap\ndata:\n  a: b\n", map[string]string{"a": "b"}, ""},
		{"plain map", "a: b\n", map[string]string{"a": "b"}, ""},
		{"other kind", "kind: Secret\ndata: {}\n", nil, "kind Secret is not supported"},
		{"not strings", "a: [1]\n", nil, "want a map of strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeData([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	secret := map[string][]byte{"tok": []byte("s3cr3t"), "a.b": []byte("x")}
	got, err := Expand("Bearer $tok/${a.b}", secret)
	if err != nil || got != "Bearer s3cr3t/x" {
		t.Errorf("Expand = %q, %v", got, err)
	}
	if _, err := Expand("$missing", secret); err == nil || !strings.Contains(err.Error(), "no key missing") {
		t.Errorf("Expand of a missing key: %v", err)
	}
}

// KeyErrors names every key Parse found a problem in, in key order.
func TestKeyErrors(t *testing.T) {
	_, err := Parse(map[string]string{
		"service.pagerduty":   "serviceKeys: {}",
		"service.slack":       "token: xoxb-literal",
		"template.ok":         "message: fine",
		"trigger.on-x":        "- when: 'true'\n  send: [missing]\n",
		"notifications.extra": "x",
	})
	var keys []string
	for _, ke := range KeyErrors(err) {
		keys = append(keys, ke.Key)
		if ke.Err == nil || !errors.Is(err, ke) {
			t.Errorf("%s: %v is not in the Parse error", ke.Key, ke.Err)
		}
	}
	if d := cmp.Diff([]string{"notifications.extra", "service.pagerduty", "service.slack", "trigger.on-x"}, keys); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	if KeyErrors(nil) != nil || KeyErrors(errors.New("plain")) != nil {
		t.Error("KeyErrors of an error without keys is not empty")
	}
}

// Argo CD's GitHub App service: IDs as numbers or strings, the key a
// reference, the Enterprise API under enterpriseBaseURL.
func TestParseGitHubApp(t *testing.T) {
	c, err := Parse(map[string]string{"service.github": "appID: '12'\ninstallationID: 34\nprivateKey: $github-privateKey\nenterpriseBaseURL: https://ghe.example/api/v3\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := &GitHubService{AppID: 12, InstallationID: 34, PrivateKey: "$github-privateKey", EnterpriseBaseURL: "https://ghe.example/api/v3"}
	g := c.Services["github"].GitHub
	if d := cmp.Diff(want, g); d != "" {
		t.Errorf("service (-want +got):\n%s", d)
	}
	if g.API() != "https://ghe.example/api/v3" {
		t.Errorf("API() = %q", g.API())
	}
}
