package auth_test

import (
	"os"
	"path/filepath"
	"strings"
)

// readAll returns every security file of a data directory, concatenated.
func readAll(dataDir string) (string, error) {
	var b strings.Builder
	files, err := filepath.Glob(filepath.Join(dataDir, "security", "*.json"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		b.Write(data)
	}
	return b.String(), nil
}
