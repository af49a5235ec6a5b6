package cli

import (
	"testing"
	"time"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/internal/customizations"
	"github.com/windlass-cd/windlass/internal/settings"
)

func TestCLISettingsCustomizations(t *testing.T) {
	loaded := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	set := settings.CustomizationsSource{RepoURL: "https://git.example.com/lib.git", Path: "resource_customizations", Revision: "v2"}
	view := customizationsView{Setting: set, Workers: []customizations.WorkerStatus{
		{Worker: "w1", Status: customizations.Status{Source: "https://git.example.com/lib.git@v2:resource_customizations", Origin: customizations.OriginSettings,
			Revision: "0a1b2c3d", LoadedAt: loaded, ActionKinds: 3}},
		{Worker: "w2", Status: customizations.Status{Source: "https://git.example.com/lib.git@v2:resource_customizations", Origin: customizations.OriginSettings,
			Revision: "0a1b2c3d", LoadedAt: loaded, Error: "fetch: connection refused", FailedAt: loaded.Add(time.Minute)}},
	}}
	runCases(t, []cliCase{
		{
			name:   "settings resource-customizations get",
			args:   "settings resource-customizations get",
			routes: map[string][]reply{"GET " + customizationsPath: ok(view)},
			want:   []string{"GET " + customizationsPath},
		},
		{
			name:   "settings resource-customizations get json",
			args:   "settings resource-customizations get -o json",
			routes: map[string][]reply{"GET " + customizationsPath: ok(view)},
			want:   []string{"GET " + customizationsPath},
		},
		{
			name:   "settings resource-customizations get none",
			args:   "settings resource-customizations get",
			routes: map[string][]reply{"GET " + customizationsPath: ok(customizationsView{Workers: []customizations.WorkerStatus{}})},
			want:   []string{"GET " + customizationsPath},
		},
		{
			name:   "settings resource-customizations get forbidden",
			args:   "settings resource-customizations get",
			routes: map[string][]reply{"GET " + customizationsPath: {problemReply(403, "permission denied: repositories, get, *", "")}},
			want:   []string{"GET " + customizationsPath},
			code:   cmdline.ExitUnauthorized,
		},
		{
			name:   "settings resource-customizations set",
			args:   "settings resource-customizations set --repo https://git.example.com/lib.git --path resource_customizations --revision v2",
			routes: map[string][]reply{"PUT " + customizationsPath: ok(set)},
			want:   []string{"PUT " + customizationsPath + ` {"repoURL":"https://git.example.com/lib.git","path":"resource_customizations","revision":"v2"}`},
		},
		{
			name:   "settings resource-customizations set repo only",
			args:   "settings resource-customizations set --repo https://git.example.com/lib.git",
			routes: map[string][]reply{"PUT " + customizationsPath: ok(settings.CustomizationsSource{RepoURL: "https://git.example.com/lib.git"})},
			want:   []string{"PUT " + customizationsPath + ` {"repoURL":"https://git.example.com/lib.git"}`},
		},
		{
			name:   "settings resource-customizations set clear",
			args:   "settings resource-customizations set --clear",
			routes: map[string][]reply{"PUT " + customizationsPath: ok(settings.CustomizationsSource{})},
			want:   []string{"PUT " + customizationsPath + ` {"repoURL":""}`},
		},
		{
			name:   "settings resource-customizations set refused",
			args:   "settings resource-customizations set --repo https://git.example.com/lib.git --path ../up",
			routes: map[string][]reply{"PUT " + customizationsPath: {problemReply(400, "invalid setting: path must stay inside the repository", "")}},
			want:   []string{"PUT " + customizationsPath + ` {"repoURL":"https://git.example.com/lib.git","path":"../up"}`},
			code:   cmdline.ExitError,
		},
		{name: "settings resource-customizations set nothing", args: "settings resource-customizations set", code: cmdline.ExitUsage},
		{name: "settings resource-customizations set clear and repo", args: "settings resource-customizations set --clear --repo https://git.example.com/lib.git", code: cmdline.ExitUsage},
		{name: "settings resource-customizations set extra argument", args: "settings resource-customizations set https://git.example.com/lib.git", code: cmdline.ExitUsage},
		{name: "settings resource-customizations no verb", args: "settings resource-customizations", code: cmdline.ExitUsage},
		{name: "settings unknown verb", args: "settings plugins", code: cmdline.ExitUsage},
	})
}
