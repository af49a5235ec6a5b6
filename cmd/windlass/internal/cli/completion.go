package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/windlass-cd/windlass/cmd/windlass/internal/cmdline"
)

// subgroups are the verbs that are groups of verbs themselves.
var subgroups = map[string][]verb{"proj role": roleVerbs, "app actions": actionVerbs, "settings resource-customizations": customizationsVerbs}

// helpFlag is a flag in a verb's help: "  --name type  help".
var helpFlag = regexp.MustCompile(`(?m)^  (--?[A-Za-z0-9][A-Za-z0-9-]*)\b`)

// commandTree is the client commands as paths ("windlass app get") to
// their verbs, or to their flags for a verb.
type commandTree struct {
	children map[string][]string
	flags    map[string][]string
}

// tree walks the client commands, with the commands others beside them,
// and reads each verb's flags from its help.
func (c *cli) tree(ctx context.Context, others []string) commandTree {
	t := commandTree{children: map[string][]string{}, flags: map[string][]string{}}
	top := slices.Concat(others, []string{"login", "logout", "completion"}, slices.Sorted(maps.Keys(groups)))
	t.children["windlass"] = top
	t.children["windlass completion"] = []string{"bash", "zsh"}
	for _, cmd := range []string{"login", "logout"} {
		t.flags["windlass "+cmd] = c.helpFlags(ctx, cmd, nil)
	}
	var walk func(path string, verbs []verb)
	walk = func(path string, verbs []verb) {
		for _, v := range verbs {
			t.children["windlass "+path] = append(t.children["windlass "+path], v.name)
			sub := path + " " + v.name
			if vs, ok := subgroups[sub]; ok {
				walk(sub, vs)
				continue
			}
			words := strings.Fields(sub)
			t.flags["windlass "+sub] = c.helpFlags(ctx, words[0], append(words[1:], "-h"))
		}
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		walk(g, groups[g])
	}
	return t
}

// helpFlags runs a command with -h, offline, and reads its flags.
func (c *cli) helpFlags(ctx context.Context, cmd string, args []string) []string {
	var out bytes.Buffer
	h := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard, getenv: func(string) string { return "" },
		terminal: func(any) bool { return false }, http: c.http}
	if len(args) == 0 {
		args = []string{"-h"}
	}
	_ = h.run(ctx, cmd, args)
	var flags []string
	for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
		if !slices.Contains(flags, m[1]) {
			flags = append(flags, m[1])
		}
	}
	return flags
}

// Completion writes the completion script of shell (args: bash or zsh)
// for the client commands and the commands others.
func Completion(ctx context.Context, w io.Writer, args []string, others []string) error {
	return newCLI().completion(ctx, w, args, others)
}

func (c *cli) completion(ctx context.Context, w io.Writer, args []string, others []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(w, completionUsage)
		return nil
	}
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		return fmt.Errorf("%w: completion: want bash or zsh\n%s", cmdline.ErrUsage, strings.TrimSpace(completionUsage))
	}
	t := c.tree(ctx, others)
	// Each array entry is a key and a value; the names in them are
	// letters, digits and dashes, which double quotes keep as they are.
	entry, script := "    [%q]=%q\n", bashCompletion
	if args[0] == "zsh" {
		entry, script = "    %q %q\n", zshCompletion
	}
	var children, flags strings.Builder
	for _, k := range slices.Sorted(maps.Keys(t.children)) {
		fmt.Fprintf(&children, entry, k, strings.Join(t.children[k], " "))
	}
	for _, k := range slices.Sorted(maps.Keys(t.flags)) {
		fmt.Fprintf(&flags, entry, k, strings.Join(t.flags[k], " "))
	}
	_, err := io.WriteString(w, strings.NewReplacer("@CHILDREN@", children.String(), "@FLAGS@", flags.String()).Replace(script))
	return err
}

const completionUsage = `usage: windlass completion bash|zsh

Prints a script that completes windlass's commands, verbs and flags.
  bash: source <(windlass completion bash)       (or save it in /etc/bash_completion.d/windlass)
  zsh:  source <(windlass completion zsh)        (or save it as _windlass in a directory of $fpath)
`

// bashCompletion is the bash script: the command path is the longest run
// of words that names a command, flags are offered after a "-".
const bashCompletion = `# bash completion for windlass (windlass completion bash)
_windlass() {
  local -A children=(
@CHILDREN@  )
  local -A flags=(
@FLAGS@  )
  local cur=${COMP_WORDS[COMP_CWORD]} path=windlass next i
  for ((i = 1; i < COMP_CWORD; i++)); do
    next="$path ${COMP_WORDS[i]}"
    if [[ -n ${children[$next]+x} || -n ${flags[$next]+x} ]]; then path=$next; fi
  done
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${flags[$path]}" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "${children[$path]}" -- "$cur"))
  fi
}
complete -o default -F _windlass windlass
`

// zshCompletion is the same for zsh, sourced or autoloaded from $fpath.
const zshCompletion = `#compdef windlass
# zsh completion for windlass (windlass completion zsh)
_windlass() {
  local -A children flags
  children=(
@CHILDREN@  )
  flags=(
@FLAGS@  )
  local p=windlass next i
  for ((i = 2; i < CURRENT; i++)); do
    next="$p ${words[i]}"
    if (( ${+children[$next]} || ${+flags[$next]} )); then p=$next; fi
  done
  if [[ ${words[CURRENT]} == -* ]]; then
    compadd -- ${=flags[$p]}
  elif (( ${+children[$p]} )); then
    compadd -- ${=children[$p]}
  else
    _files
  fi
}
if [[ $funcstack[1] == _windlass ]]; then
  _windlass "$@"
else
  compdef _windlass windlass
fi
`
