package manifest

import (
	"bufio"
	"bytes"
)

func bufioReader(data []byte) *bufio.Reader {
	return bufio.NewReaderSize(bytes.NewReader(data), 64<<10)
}
