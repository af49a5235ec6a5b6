package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/labstack/echo/v5"
)

// streamAppSets sends the rows of the set list the caller may get as they
// change (an "applicationset" event each), and "deleted" with the name of
// a set that is gone. Each poll reads the list from visibility.
func (s *Server) streamAppSets(c *echo.Context) error {
	rows, err := s.appSetRows(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out := newSSE(c)
	last := map[string][]byte{}
	for {
		seen := make(map[string]bool, len(rows))
		for _, r := range rows {
			seen[r.Name] = true
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if !bytes.Equal(b, last[r.Name]) {
				if err := out.send(eventAppSet, b); err != nil {
					return nil // the client went away
				}
				last[r.Name] = b
			}
		}
		for name := range last {
			if !seen[name] {
				delete(last, name)
				if err := out.send(eventDeleted, fmt.Appendf(nil, "%q", name)); err != nil {
					return nil
				}
			}
		}
		if err := out.keepAlive(); err != nil || !sleep(ctx, streamListPoll) {
			return nil
		}
		// A failed read keeps the last rows: visibility can blink.
		if next, err := s.appSetRows(c); err == nil {
			rows = next
		}
	}
}
