package check

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Dockerfile is what the checks need from one Dockerfile: its stages (the image targets) and the
// problems found in it.
type Dockerfile struct {
	Stages []string
}

// CheckDockerfile reads a Dockerfile whose build context is repo and reports every COPY source
// (from the context, not another stage) that does not exist and every ENTRYPOINT or CMD
// `python -m MODULE` whose module is not in the repository. Images cannot be built here without a
// container engine; this is the part of a build that can be checked without one.
func CheckDockerfile(path, repo string, moduleExists func(string) bool) (Dockerfile, []error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Dockerfile{}, []error{err}
	}
	rel, _ := filepath.Rel(repo, path)
	var df Dockerfile
	var errs []error
	stage := ""
	for n, line := range logicalLines(string(data)) {
		fields := strings.Fields(line.text)
		if len(fields) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", rel, line.number)
		if stage != "" {
			where += " (stage " + stage + ")"
		}
		_ = n
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			if len(fields) >= 4 && strings.EqualFold(fields[2], "AS") {
				stage = fields[3]
				df.Stages = append(df.Stages, stage)
			} else {
				stage = ""
			}
		case "COPY", "ADD":
			args, fromStage := copyArgs(fields[1:])
			if fromStage || len(args) < 2 {
				continue
			}
			for _, src := range args[:len(args)-1] {
				matches, _ := filepath.Glob(filepath.Join(repo, src))
				if len(matches) == 0 {
					errs = append(errs, fmt.Errorf("%s: COPY source %q does not exist in the repository", where, src))
				}
			}
		case "ENTRYPOINT", "CMD":
			rest := strings.TrimSpace(line.text[len(fields[0]):])
			var argv []string
			if err := json.Unmarshal([]byte(rest), &argv); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s must be in exec form (a JSON list): %v", where, fields[0], err))
				continue
			}
			for i := 0; i+1 < len(argv); i++ {
				if argv[i] == "-m" && !moduleExists(argv[i+1]) {
					errs = append(errs, fmt.Errorf("%s: %s runs python -m %s: no such module in the repository", where, fields[0], argv[i+1]))
				}
			}
		}
	}
	if len(df.Stages) == 0 {
		errs = append(errs, fmt.Errorf("%s: no named stage (FROM ... AS NAME), so no image target", rel))
	}
	return df, errs
}

// copyArgs drops COPY's --flags and says whether it copies from another stage or image.
func copyArgs(args []string) ([]string, bool) {
	var out []string
	from := false
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			from = from || strings.HasPrefix(a, "--from=")
			continue
		}
		out = append(out, a)
	}
	return out, from
}

type logicalLine struct {
	number int
	text   string
}

// logicalLines joins backslash-continued lines and drops comments, keeping each instruction's
// first line number for messages. Heredocs are not used in memex's Dockerfiles.
func logicalLines(text string) []logicalLine {
	var out []logicalLine
	var current strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if current.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			current.WriteString(cont + " ")
			continue
		}
		current.WriteString(line)
		out = append(out, logicalLine{start, current.String()})
		current.Reset()
	}
	return out
}

// ModuleFinder says whether `python -m MODULE` names a package with __main__.py or a module file
// in one of the repository's source trees (shared/, gateway/, protos/, services/*/).
func ModuleFinder(repo string) func(string) bool {
	return func(module string) bool {
		path := strings.ReplaceAll(module, ".", "/")
		for _, pattern := range []string{
			"*/src/" + path + "/__main__.py", "*/src/" + path + ".py",
			"services/*/src/" + path + "/__main__.py", "services/*/src/" + path + ".py",
		} {
			if matches, _ := filepath.Glob(filepath.Join(repo, pattern)); len(matches) > 0 {
				return true
			}
		}
		return false
	}
}
