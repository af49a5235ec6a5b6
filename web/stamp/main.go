// Command stamp writes build-info.json into a built UI bundle: the hash of
// the sources it was built from (`make ui` runs it after Vite).
//
//	go run ./web/stamp -web web -out web/bundle/dist/build-info.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/windlass-cd/windlass/web"
)

func main() {
	dir := flag.String("web", "web", "the web directory (sources)")
	out := flag.String("out", "web/bundle/dist/"+web.BuildInfoFile, "the stamp to write")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "stamp:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	h, err := web.SourceHash(dir)
	if err != nil {
		return err
	}
	b, err := json.Marshal(web.BuildInfo{SourceHash: h})
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}
