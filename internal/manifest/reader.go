package manifest

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// NewYAMLReader splits data into its YAML documents, as Parse does.
func NewYAMLReader(data []byte) *utilyaml.YAMLReader {
	return utilyaml.NewYAMLReader(bufioReader(data))
}

// bufioReader reads data for the YAML reader, ending it with a newline when
// it lacks one. Without that, a last line whose length is a multiple of
// the buffer's size was lost: the line reader gets it in full parts and
// then io.EOF, and the YAML reader drops a line that comes with io.EOF.
// The newline changes nothing else: the line reader ends every line with
// one. The buffer is at most 64 KB, and no larger than needed, since a
// parse makes one per file.
func bufioReader(data []byte) *bufio.Reader {
	var r io.Reader = bytes.NewReader(data)
	if !bytes.HasSuffix(data, []byte("\n")) {
		r = io.MultiReader(r, strings.NewReader("\n"))
	}
	return bufio.NewReaderSize(r, min(len(data)+1, 64<<10))
}
