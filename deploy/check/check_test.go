package check

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const repo = "../.."

// readList reads one name per line (the first field), skipping blanks and # comments.
func readList(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			names[strings.Fields(line)[0]] = true
		}
	}
	return names
}

// readSettings reads scripts/settings_env.py's output: a variable and the package that reads it.
func readSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) == 2 {
			settings[fields[0]] = fields[1]
		} else if len(fields) != 0 {
			t.Fatalf("%s: want `NAME PACKAGE` lines, got %q", path, line)
		}
	}
	return settings
}

// TestManifests is the check CI runs: every manifest under deploy/ decodes strictly and every
// reference in it holds. The settings come from the Python settings classes
// (scripts/settings_env.py), so a renamed setting fails here.
func TestManifests(t *testing.T) {
	settingsFile := os.Getenv("MEMEX_SETTINGS_ENV")
	if settingsFile == "" {
		t.Fatal("MEMEX_SETTINGS_ENV is unset: run `make deploy-check`, which writes the list of " +
			"settings from scripts/settings_env.py and passes it here")
	}
	weaviateSource, weaviateVersion := os.Getenv("WEAVIATE_SOURCE"), os.Getenv("WEAVIATE_VERSION")
	if weaviateSource == "" || weaviateVersion == "" {
		t.Fatal("WEAVIATE_SOURCE and WEAVIATE_VERSION are unset: run `make deploy-check`")
	}
	weaviateEnv, err := WeaviateEnv(weaviateSource)
	if err != nil {
		t.Fatal(err)
	}
	if len(weaviateEnv) < 100 {
		t.Fatalf("only %d names in Weaviate's configuration code at %s", len(weaviateEnv), weaviateSource)
	}
	moduleExists := ModuleFinder(repo)
	targets := map[string]bool{}
	dockerfiles, _ := filepath.Glob(filepath.Join(repo, "deploy/docker/Dockerfile*"))
	if len(dockerfiles) == 0 {
		t.Error("no Dockerfile under deploy/docker")
	}
	for _, path := range dockerfiles {
		df, errs := CheckDockerfile(path, repo, moduleExists)
		for _, err := range errs {
			t.Error(err)
		}
		for _, stage := range df.Stages {
			targets[stage] = true
		}
	}
	readme, err := os.ReadFile(filepath.Join(repo, "deploy/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range regexp.MustCompile(`deploy/docker/[A-Za-z0-9._-]+`).FindAllString(string(readme), -1) {
		if _, err := os.Stat(filepath.Join(repo, path)); err != nil {
			t.Errorf("deploy/README.md: names %s, which does not exist", path)
		}
	}
	objects, errs := LoadDir(filepath.Join(repo, "deploy"))
	errs = append(errs, CheckReferences(objects, Config{
		Settings:        readSettings(t, settingsFile),
		OperatorSecrets: readList(t, filepath.Join(repo, "deploy/secrets.txt")),
		ImageTargets:    targets,
		ModuleExists:    moduleExists,
		WeaviateEnv:     weaviateEnv,
		WeaviateVersion: strings.TrimPrefix(weaviateVersion, "v"),
	})...)
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("%d objects decoded from deploy/*.yaml, %d image targets, %d settings", len(objects), len(targets), len(readSettings(t, settingsFile)))
	if len(objects) < 10 {
		t.Errorf("only %d objects decoded from deploy/: is the loader still finding the manifests?", len(objects))
	}
}

var testConfig = Config{
	Settings: map[string]string{
		"MEMEX_EMBEDDING_PORT": "embedding", "MEMEX_EMBEDDING_MODEL": "embedding",
		"MEMEX_RETRIEVAL_EMBEDDING_ADDR": "retrieval", "MEMEX_RETRIEVAL_PORT": "retrieval",
		"MEMEX_INTERNAL_AUTH": "shared", "MEMEX_INTERNAL_TLS_DIR": "shared",
	},
	OperatorSecrets: map[string]bool{"memex-tls-embedding": true},
	ImageTargets:    map[string]bool{"embedding": true, "retrieval": true},
	ModuleExists: func(m string) bool {
		return m == "memex.embedding" || m == "memex.retrieval" || m == "memex.shared.health"
	},
	WeaviateEnv:     map[string]bool{"CLUSTER_HOSTNAME": true, "RAFT_JOIN": true},
	WeaviateVersion: "1.39.0",
}

func checkFile(path string) []error {
	objects, errs := DecodeFile(path, filepath.Base(path))
	if len(errs) > 0 {
		return errs
	}
	return CheckReferences(objects, testConfig)
}

// TestGoodExample: the small valid set the bad cases are variations of passes, so each bad case
// fails for its own defect and not for something they share.
func TestGoodExample(t *testing.T) {
	for _, err := range checkFile("testdata/good.yaml") {
		t.Error(err)
	}
}

// TestBadManifests: each testdata/bad file carries one defect, named on its first line
// (`# want: TEXT`), and the check must report it with the file and the object.
func TestBadManifests(t *testing.T) {
	paths, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(paths) < 8 {
		t.Fatalf("expected the bad cases under testdata/bad, found %d", len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s: first line must be `# want: TEXT`", path)
			}
			errs := checkFile(path)
			if len(errs) == 0 {
				t.Fatalf("%s: passed, but it should fail with %q", path, want)
			}
			for _, err := range errs {
				if strings.Contains(err.Error(), want) && strings.HasPrefix(err.Error(), filepath.Base(path)+": ") {
					return
				}
			}
			t.Fatalf("%s: no error says %q; got %v", path, want, errs)
		})
	}
}

func TestBadDockerfile(t *testing.T) {
	_, errs := CheckDockerfile("testdata/Dockerfile.bad", ".", func(m string) bool { return m == "memex.embedding" })
	wants := []string{
		`Dockerfile.bad:4 (stage build): COPY source "no-such-dir/" does not exist`,
		`Dockerfile.bad:7 (stage embedding): ENTRYPOINT runs python -m memex.nosuch: no such module`,
		`Dockerfile.bad:8 (stage embedding): CMD must be in exec form`,
	}
	if len(errs) != len(wants) {
		t.Fatalf("want %d errors, got %v", len(wants), errs)
	}
	for i, want := range wants {
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("error %d: want %q, got %q", i, want, errs[i])
		}
	}
}
