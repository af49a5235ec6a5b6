// Package repostore makes a settings store in memory that holds given
// registered repositories and credential templates, for tests of the
// code that looks credentials up through repocred.
package repostore

import (
	"testing"

	"github.com/windlass-cd/windlass/internal/secretstore"
	"github.com/windlass-cd/windlass/internal/settings"
)

// New returns a store holding repos and the credential templates tmpls.
func New(t testing.TB, repos, tmpls []settings.Repository) *settings.Store {
	t.Helper()
	st, err := settings.New(&secretstore.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range repos {
		if err := st.PutRepo(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range tmpls {
		if err := st.PutRepoCreds(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	return st
}
