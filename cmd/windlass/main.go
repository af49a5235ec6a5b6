// Command windlass is Windlass's single binary: `windlass dev` runs
// everything in one process (embedded Temporal server and UI, Redis, worker,
// REST API); `windlass server` and `windlass worker` are the production
// roles; `windlass app ...` is the CLI client of the REST API.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/windlass-cd/windlass/activities/render"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cli"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
	"github.com/windlass-cd/windlass/cmd/windlass/internal/roles"
	"github.com/windlass-cd/windlass/internal/temporalx"
)

const usage = `usage: windlass <command> [flags]

commands:
  dev       run everything in one process (embedded Temporal + UI, Redis, worker, API)
  server    run the REST API against an external Temporal
  worker    run the Temporal worker against an external Temporal
  temporal  run a standalone Temporal server (SQLite, as in dev) for server and workers
  plugin-server run config-management plugins for workers, without their credentials
  render    render a source offline, as a worker would: render --path P [--repo URL] (-h for flags)
  health    assess one object from a file: health [--customizations DIR] --object FILE
  probe     GET a URL, exit 0 on 2xx: probe [--timeout 3s] URL (container health checks)
  version   print this binary's version: version [-o json]
  completion print a shell completion script: completion bash|zsh

client commands (a client of the REST API, as argocd is of Argo CD's):
  login     log in: login [--server URL] [--username U] [--password-stdin | --sso]
  logout    revoke the session and forget its token
  app       applications: list | get | create | set | unset | patch | edit | add-source |
            remove-source | delete | sync | wait | diff | history | rollback | manifests |
            resources | get-resource | patch-resource | delete-resource | logs | refresh |
            terminate-op | confirm-deletion
  proj      projects: list | get | create | delete | role create-token|list-tokens|delete-token
  repo      repositories: add | list | rm
  repocreds credential templates for URL prefixes: add | list | rm
  gpg       GPG public keys for projects' signatureKeys: add | list | rm
  cluster   clusters: add | list | rm
  appset    ApplicationSets: generate (preview the apps a set makes)
  notifications  preview | trigger run | history
  settings  server settings: resource-customizations get|set (the health library's Git source)
  account   accounts: list | get-user-info | update-password | generate-token | list-tokens |
            delete-token | can-i
  migrate   migrate argocd: take over a live Argo CD's apps, projects, repositories and clusters

  Flags may come before or after the arguments. Every client command takes
  --server URL (env WINDLASS_SERVER; default: the server logged in to, else
  http://127.0.0.1:8080) and --config PATH (default $XDG_CONFIG_HOME/windlass/config,
  else ~/.config/windlass/config: YAML with server, username and token, mode 0600).
  WINDLASS_TOKEN is a token to use instead of the one logged in. Get and list
  commands take -o json|yaml. Progress goes to stderr.

exit codes:
  0  ok
  1  error
  2  usage error
  3  unauthenticated or forbidden (401, 403): run windlass login
  4  not found (404)
  5  the sync or rollback failed, or the request conflicted (409)
  6  timed out (app wait --timeout, app sync --timeout)

  app diff exits as argocd app diff does: 0 no differences, 1 differences,
  2 any error.

run "windlass <command> -h" for the verbs or flags of a command.
`

func main() {
	if os.Getenv(render.SandboxEnv) == "1" { // a worker's render sandbox
		os.Exit(render.SandboxMain(os.Stdin, os.Stdout))
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := report(os.Stderr, os.Args[1], run(ctx, os.Args[1], os.Args[2:]))
	stop()
	os.Exit(code)
}

// report prints the error of the command cmd, if any, and returns the exit
// code. Usage errors print their message too, except render's, which
// prints its own.
func report(stderr io.Writer, cmd string, err error) int {
	if cmd == "render" && errors.Is(err, cmdline.ErrUsage) {
		return cmdline.ExitCode(err)
	}
	return cmdline.Report(stderr, err)
}

// serverCommands are the commands beside the client commands, which
// shell completion offers too.
var serverCommands = []string{"dev", "server", "worker", "temporal", "plugin-server", "render", "health", "probe", "version"}

func run(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "dev", "temporal":
		if err := needDevServer(cmd, temporalx.DevServerBuiltIn); err != nil {
			return err
		}
	}
	switch cmd {
	case "dev":
		return roles.Dev(ctx, args)
	case "server":
		return roles.Server(ctx, args)
	case "worker":
		return roles.Worker(ctx, args)
	case "temporal":
		return roles.Temporal(ctx, args, os.Stdout)
	case "plugin-server":
		return roles.PluginServer(ctx, args)
	case "render":
		return runRender(ctx, args, os.Stdout, os.Stderr)
	case "health":
		return runHealth(args, os.Stdin, os.Stdout, os.Stderr)
	case "probe":
		return runProbe(ctx, args, os.Stderr)
	case "version", "--version":
		return runVersion(args, os.Stdout, os.Stderr)
	case "completion":
		return cli.Completion(ctx, os.Stdout, args, serverCommands)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return nil
	}
	if cli.IsCommand(cmd) {
		return cli.Run(ctx, cmd, args)
	}
	fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
	return cmdline.ErrUsage
}

// needDevServer refuses the commands that run the embedded Temporal server
// (dev, temporal) in a build without it: the production build (-tags
// nodevserver), which the image ships as windlass beside the full build,
// windlass-full.
func needDevServer(cmd string, builtIn bool) error {
	if builtIn {
		return nil
	}
	return fmt.Errorf("windlass %s runs the embedded Temporal server, which this production build leaves out (server, worker and the CLI only): run windlass-full %s, the full build (in the image: /usr/local/bin/windlass-full): %w",
		cmd, cmd, temporalx.ErrDevServerNotBuiltIn)
}
