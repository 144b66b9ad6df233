// Package check decodes memex's Kubernetes manifests strictly against the real API types
// (k8s.io/api) and checks the references between them, which the API server itself would only
// find out when a pod fails to start.
package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one decoded manifest document and where it came from.
type Object struct {
	File string // path relative to the folder that was loaded
	Kind string
	Name string
	Obj  runtime.Object
}

// Ref names an object the way messages do: FILE: Kind/name.
func (o Object) Ref() string { return fmt.Sprintf("%s: %s/%s", o.File, o.Kind, o.Name) }

// scheme knows every API group a memex manifest may use; a kind outside it is an error, not a
// silent skip (a typo in apiVersion must not turn a document into something nobody checks).
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		networkingv1.AddToScheme, discoveryv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// DecodeFile splits a YAML file into documents and decodes each strictly into its API type:
// unknown or duplicate fields and wrong types are errors.
func DecodeFile(path, rel string) ([]Object, []error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []error{err}
	}
	var objects []Object
	var errs []error
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return objects, append(errs, fmt.Errorf("%s: document %d: %w", rel, n, err))
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var meta typeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			errs = append(errs, fmt.Errorf("%s: document %d: not YAML: %w", rel, n, err))
			continue
		}
		where := fmt.Sprintf("%s: %s/%s", rel, meta.Kind, meta.Metadata.Name)
		gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
		obj, err := scheme.New(gvk)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: unknown kind %q in apiVersion %q", where, meta.Kind, meta.APIVersion))
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		if meta.Metadata.Name == "" {
			errs = append(errs, fmt.Errorf("%s: metadata.name is empty", where))
			continue
		}
		objects = append(objects, Object{File: rel, Kind: meta.Kind, Name: meta.Metadata.Name, Obj: obj})
	}
	return objects, errs
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			out.WriteString(line + "\n")
		}
	}
	return out.Bytes()
}

// LoadDir decodes every *.yaml file directly under dir (sub-folders such as prometheus/ and
// grafana/ hold files for other programs, not Kubernetes objects).
func LoadDir(dir string) ([]Object, []error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, []error{err}
	}
	sort.Strings(paths)
	var objects []Object
	var errs []error
	for _, path := range paths {
		objs, fileErrs := DecodeFile(path, filepath.Base(path))
		objects = append(objects, objs...)
		errs = append(errs, fileErrs...)
	}
	if len(paths) == 0 {
		errs = append(errs, fmt.Errorf("%s: no *.yaml manifests", dir))
	}
	return objects, errs
}
