package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// app diff's own exit codes, as argocd app diff's.
const (
	exitDiffFound = 1 // Git and the cluster differ
	exitDiffError = 2 // any error, whatever its usual code
)

// cli runs the client commands (login, logout, app, proj, repo, cluster,
// account): its streams and environment are fields so that tests can set
// them.
type cli struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// terminal reports whether a stream is a terminal.
	terminal func(any) bool
	// readHidden reads a line from the terminal stdin without echo.
	readHidden func() (string, error)
	// poll is the interval of the progress polls of sync and wait.
	poll time.Duration
	http *http.Client

	lines *bufio.Reader // stdin, read line by line
}

// newCLI is the client with the process's streams and environment.
func newCLI() *cli {
	return &cli{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		terminal: isTerminal,
		readHidden: func() (string, error) {
			b, err := term.ReadPassword(int(os.Stdin.Fd()))
			return string(b), err
		},
		poll: time.Second,
		http: &http.Client{},
	}
}

func isTerminal(stream any) bool {
	f, ok := stream.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// verb is one command of a group: `windlass app sync` is the verb "sync"
// of the group "app".
type verb struct {
	name, synopsis, help string
	run                  func(c *cli, ctx context.Context, args []string) error
}

// groups are the client commands with verbs.
var groups = map[string][]verb{
	"app": appVerbs, "proj": projVerbs, "repo": repoVerbs, "repocreds": repoCredsVerbs, "cluster": clusterVerbs, "account": accountVerbs, "appset": appsetVerbs,
	"notifications": notificationsVerbs, "settings": settingsVerbs, "gpg": gpgVerbs,
}

// IsCommand reports whether cmd is a client command.
func IsCommand(cmd string) bool {
	_, ok := groups[cmd]
	return ok || cmd == "login" || cmd == "logout"
}

// Run runs the client command cmd with the process's streams and
// environment.
func Run(ctx context.Context, cmd string, args []string) error {
	return newCLI().run(ctx, cmd, args)
}

// run runs a client command.
func (c *cli) run(ctx context.Context, cmd string, args []string) error {
	switch cmd {
	case "login":
		return c.login(ctx, args)
	case "logout":
		return c.logout(ctx, args)
	}
	return c.dispatch(ctx, cmd, groups[cmd], args)
}

// leadingFlags are the flags that may come before a verb (with their
// values), as they are flags of every verb: `windlass app --server URL
// list`.
var leadingFlags = map[string]bool{"server": true, "config": true, "o": true, "project": true}

// dispatch runs the verb of a group: the first argument that is not a
// leading flag.
func (c *cli) dispatch(ctx context.Context, group string, verbs []verb, args []string) error {
	i := 0
	for ; i < len(args) && len(args[i]) > 1 && args[i][0] == '-'; i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case name == "h" || name == "help":
			c.groupUsage(c.stdout, group, verbs)
			return nil
		case !leadingFlags[name]:
			return fmt.Errorf("%w: %s: the flag %s goes after the command (windlass %s -h lists them)", cmdline.ErrUsage, group, args[i], group)
		case !hasValue:
			i++
		}
	}
	if i >= len(args) {
		c.groupUsage(c.stderr, group, verbs)
		return cmdline.ErrUsage
	}
	if args[i] == "help" {
		c.groupUsage(c.stdout, group, verbs)
		return nil
	}
	for _, v := range verbs {
		if v.name == args[i] {
			return v.run(c, ctx, slices.Concat(args[:i], args[i+1:]))
		}
	}
	return fmt.Errorf("%w: unknown command %q (windlass %s -h lists them)", cmdline.ErrUsage, group+" "+args[i], group)
}

func (c *cli) groupUsage(w io.Writer, group string, verbs []verb) {
	fmt.Fprintf(w, "usage: windlass %s <command> [flags]\n\ncommands:\n", group)
	tw := newTable(w)
	for _, v := range verbs {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(v.name+" "+v.synopsis), v.help)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nrun \"windlass %s <command> -h\" for the flags of a command.\n", group)
}

// flags is the flag set of one verb, with the flags every client command
// has (--server, --config) and, where the verb asks, -o and --project.
type flags struct {
	*flag.FlagSet
	cli      *cli
	name     string // "app get"
	synopsis string // "NAME"
	server   string
	config   string
	output   *string
	project  *string
}

// flags starts the flag set of the verb name ("app get") whose positional
// arguments synopsis describes ("NAME").
func (c *cli) flags(name, synopsis string) *flags {
	return c.flagsWithServer(name, synopsis, "server")
}

// flagsWithServer is flags where the API URL flag has another name
// (cluster add uses --server for the cluster's URL).
func (c *cli) flagsWithServer(name, synopsis, serverFlag string) *flags {
	f := &flags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), cli: c, name: name, synopsis: synopsis}
	f.SetOutput(io.Discard)
	f.StringVar(&f.server, serverFlag, "", "Windlass API URL (env WINDLASS_SERVER; default: the server logged in to)")
	f.StringVar(&f.config, "config", "", "client config file (default $XDG_CONFIG_HOME/windlass/config or ~/.config/windlass/config)")
	return f
}

// withOutput adds -o json|yaml.
func (f *flags) withOutput() *flags {
	f.output = f.String("o", "", "output format: json or yaml (default: a table)")
	return f
}

// withProject adds --project.
func (f *flags) withProject() *flags {
	f.project = f.String("project", "", "project of the application (default: default)")
	return f
}

// anyArgs is the n of parse for a verb that takes any number of
// positional arguments.
const anyArgs = -1

// parse parses args, flags before or after the positional arguments, and
// checks that there are n of those (anyArgs: any number).
func (f *flags) parse(args []string, n int) ([]string, error) {
	if err := f.Parse(reorder(f.FlagSet, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.printHelp(f.cli.stdout)
			return nil, err
		}
		return nil, f.usageError("%v", err)
	}
	if n != anyArgs && f.NArg() != n {
		if f.synopsis == "" {
			return nil, f.usageError("unexpected arguments: %s", strings.Join(f.Args(), " "))
		}
		return nil, f.usageError("want %s", f.synopsis)
	}
	if f.output != nil && *f.output != "" && *f.output != "json" && *f.output != "yaml" {
		return nil, f.usageError("-o %s: want json or yaml", *f.output)
	}
	return f.Args(), nil
}

// usageError is a usage error of the verb, with its synopsis.
func (f *flags) usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s\nusage: windlass %s [flags] (-h for the flags)",
		cmdline.ErrUsage, f.name, fmt.Sprintf(format, a...), strings.TrimSpace(f.name+" "+f.synopsis))
}

func (f *flags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: windlass %s [flags]\n\nflags:\n", strings.TrimSpace(f.name+" "+f.synopsis))
	tw := newTable(w)
	f.VisitAll(func(fl *flag.Flag) {
		dash := "--"
		if len(fl.Name) == 1 {
			dash = "-"
		}
		typ, help := flag.UnquoteUsage(fl)
		if fl.DefValue != "" && fl.DefValue != "false" && fl.DefValue != "0" && fl.DefValue != "0s" {
			help += " (default " + fl.DefValue + ")"
		}
		fmt.Fprintf(tw, "  %s%s %s\t%s\n", dash, fl.Name, typ, help)
	})
	tw.Flush()
}

// set reports whether the flag name was given.
func (f *flags) set(name string) bool {
	found := false
	f.Visit(func(fl *flag.Flag) { found = found || fl.Name == name })
	return found
}

// exclusive is a usage error when more than one of the named flags is set.
func (f *flags) exclusive(names ...string) error {
	var set []string
	for _, n := range names {
		if f.set(n) {
			set = append(set, "--"+n)
		}
	}
	if len(set) > 1 {
		return f.usageError("%s exclude each other", strings.Join(set, " and "))
	}
	return nil
}

// reorder moves the flags of args before the positional arguments, so that
// flags may follow them (as in argocd). "--" ends the flags.
func reorder(fs *flag.FlagSet, args []string) []string {
	var flagArgs, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flagArgs = append(flagArgs, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		fl := fs.Lookup(name)
		if fl == nil {
			continue
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flagArgs = append(flagArgs, args[i])
		}
	}
	return append(append(flagArgs, "--"), positional...)
}

// readLine reads one line of stdin, without its line ending.
func (c *cli) readLine() (string, error) {
	if c.lines == nil {
		c.lines = bufio.NewReader(c.stdin)
	}
	s, err := c.lines.ReadString('\n')
	if err == io.EOF && s != "" {
		err = nil
	}
	if err != nil {
		if err == io.EOF {
			return "", errors.New("stdin ended before a line was read")
		}
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// readSecret reads a secret from stdin: on a terminal after a prompt and
// without echo, else the first line.
func (c *cli) readSecret(prompt string) (string, error) {
	if !c.terminal(c.stdin) {
		s, err := c.readLine()
		if err != nil {
			return "", fmt.Errorf("read %s from stdin: %w", strings.ToLower(strings.TrimSuffix(prompt, ": ")), err)
		}
		return s, nil
	}
	fmt.Fprint(c.stderr, prompt)
	s, err := c.readHidden()
	fmt.Fprintln(c.stderr)
	return s, err
}

// prompt asks for a line on a terminal; off a terminal it reads a line.
func (c *cli) prompt(prompt string) (string, error) {
	if c.terminal(c.stdin) {
		fmt.Fprint(c.stderr, prompt)
	}
	return c.readLine()
}
