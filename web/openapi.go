package web

import (
	"embed"
	"net/http"
)

// staticFiles is the dashboard; openapi.json describes the API.
//
//go:embed static openapi.json
var staticFiles embed.FS

// GET /api/openapi.json
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	b, err := staticFiles.ReadFile("openapi.json")
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, err = w.Write(b)
	return err
}
