package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/windlass-cd/windlass/api/rbac"
	"github.com/windlass-cd/windlass/internal/gpgkey"
)

// GPG public keys (Argo CD's gpgkeys), which projects name in
// signatureKeys. RBAC objects are key IDs.
func (s *Server) gpgKeyRoutes(g *echo.Group) {
	g.GET("/gpgkeys", s.listGPGKeys)
	g.POST("/gpgkeys", s.createGPGKeys)
	g.GET("/gpgkeys/:keyID", s.getGPGKey)
	g.DELETE("/gpgkeys/:keyID", s.deleteGPGKey)
}

// GPGKeyList is a list of GPG public keys.
type GPGKeyList struct {
	Items []gpgkey.Key `json:"items"`
}

// GPGKeyCreate carries one or more ASCII-armored public keys.
type GPGKeyCreate struct {
	KeyData string `json:"keyData"`
}

func (s *Server) listGPGKeys(c *echo.Context) error {
	keys, err := s.opts.Settings.GPGKeys(c.Request().Context())
	if err != nil {
		return err
	}
	out := GPGKeyList{Items: []gpgkey.Key{}}
	for _, k := range keys {
		if s.allowed(c, rbac.ResourceGPGKeys, rbac.ActionGet, k.KeyID) {
			out.Items = append(out.Items, k)
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getGPGKey(c *echo.Context) error {
	id, err := s.gpgKeyID(c, rbac.ActionGet)
	if err != nil {
		return err
	}
	k, err := s.opts.Settings.GPGKey(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, k)
}

// createGPGKeys stores the keys of the body; a key already stored is
// refused unless ?upsert=true. Permission is checked for every key first.
func (s *Server) createGPGKeys(c *echo.Context) error {
	var in GPGKeyCreate
	if err := echo.BindBody(c, &in); err != nil {
		return problem(http.StatusBadRequest, "request body is not a valid GPG key: "+err.Error())
	}
	keys, err := gpgkey.Parse(in.KeyData)
	if err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	ctx := c.Request().Context()
	for _, k := range keys {
		if err := s.authorize(c, rbac.ResourceGPGKeys, rbac.ActionCreate, k.KeyID); err != nil {
			return err
		}
		if _, err := s.opts.Settings.GPGKey(ctx, k.KeyID); err == nil {
			if c.QueryParam("upsert") != "true" {
				return problem(http.StatusConflict, "GPG key "+k.KeyID+" exists (use ?upsert=true)")
			}
			if err := s.authorize(c, rbac.ResourceGPGKeys, rbac.ActionUpdate, k.KeyID); err != nil {
				return err
			}
		}
	}
	stored, err := s.opts.Settings.AddGPGKeys(ctx, in.KeyData)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, GPGKeyList{Items: stored})
}

func (s *Server) deleteGPGKey(c *echo.Context) error {
	id, err := s.gpgKeyID(c, rbac.ActionDelete)
	if err != nil {
		return err
	}
	if err := s.opts.Settings.DeleteGPGKey(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// gpgKeyID reads the key ID of the path, upper case, and checks act on it.
func (s *Server) gpgKeyID(c *echo.Context, act string) (string, error) {
	id, err := gpgkey.NormalizeID(c.Param("keyID"))
	if err != nil {
		return "", problem(http.StatusBadRequest, err.Error())
	}
	if err := s.authorize(c, rbac.ResourceGPGKeys, act, id); err != nil {
		return "", err
	}
	return id, nil
}
