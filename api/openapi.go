package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v5"
)

// openAPIDocument is the OpenAPI 3.1 description of the API, written by
// hand. openapi_test.go checks that it documents exactly the routes the
// server registers and that its references resolve.
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI answers GET /api/v1/openapi.json, a public route.
func serveOpenAPI(c *echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDocument)
}
