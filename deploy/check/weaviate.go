package check

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Weaviate reads its configuration from environment variables, named as string literals in these
// folders of its source (usecases/config/environment.go above all).
var weaviateConfigDirs = []string{"usecases/config", "cluster", "adapters/handlers/rest"}

var envLiteral = regexp.MustCompile(`"([A-Z][A-Z0-9_]{2,})"`)

// WeaviateEnv is every upper-case string literal in Weaviate's configuration code: a superset of
// the variables it reads, so a name not in it is certainly not read.
func WeaviateEnv(source string) (map[string]bool, error) {
	names := map[string]bool{}
	for _, dir := range weaviateConfigDirs {
		err := filepath.WalkDir(filepath.Join(source, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range envLiteral.FindAllStringSubmatch(string(data), -1) {
				names[m[1]] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}
