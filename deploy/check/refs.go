package check

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Config is what the cross-reference checks compare the manifests with.
type Config struct {
	// Settings maps every MEMEX_* variable a memex settings class accepts to the package that
	// reads it (embedding, retrieval, …, or shared for the ones every service reads).
	Settings map[string]string
	// OperatorSecrets are Secrets the operator creates by hand (never committed), by name.
	OperatorSecrets map[string]bool
	// ImageTargets are the memex image names the Dockerfile builds (memex/<target>).
	ImageTargets map[string]bool
	// ModuleExists says whether `python -m MODULE` has a module in the repository.
	ModuleExists func(module string) bool
	// WeaviateEnv is what Weaviate's configuration code names (WeaviateEnv), and WeaviateVersion
	// the version memex builds and tests (Makefile WEAVIATE_VERSION, without the v).
	WeaviateEnv     map[string]bool
	WeaviateVersion string
}

type pod struct {
	owner  Object
	labels map[string]string
	annots map[string]string
	spec   corev1.PodSpec
	claims map[string]bool // volumeClaimTemplates of a StatefulSet
}

type index struct {
	pvcs, configMaps, secrets, endpoints map[string]bool
	configData                           map[string]map[string]string
	services                             map[string]*corev1.Service
	pods                                 []pod
}

func buildIndex(objects []Object) index {
	ix := index{
		pvcs: map[string]bool{}, configMaps: map[string]bool{}, secrets: map[string]bool{},
		endpoints: map[string]bool{}, services: map[string]*corev1.Service{},
		configData: map[string]map[string]string{},
	}
	for _, o := range objects {
		switch obj := o.Obj.(type) {
		case *corev1.PersistentVolumeClaim:
			ix.pvcs[o.Name] = true
		case *corev1.ConfigMap:
			ix.configMaps[o.Name] = true
			ix.configData[o.Name] = obj.Data
		case *corev1.Secret:
			ix.secrets[o.Name] = true
		case *corev1.Endpoints:
			ix.endpoints[o.Name] = true
		case *discoveryv1.EndpointSlice:
			ix.endpoints[obj.Labels[discoveryv1.LabelServiceName]] = true
		case *corev1.Service:
			ix.services[o.Name] = obj
		case *appsv1.Deployment:
			ix.pods = append(ix.pods, pod{o, obj.Spec.Template.Labels, obj.Spec.Template.Annotations, obj.Spec.Template.Spec, nil})
		case *appsv1.StatefulSet:
			claims := map[string]bool{}
			for _, c := range obj.Spec.VolumeClaimTemplates {
				claims[c.Name] = true
			}
			ix.pods = append(ix.pods, pod{o, obj.Spec.Template.Labels, obj.Spec.Template.Annotations, obj.Spec.Template.Spec, claims})
		}
	}
	return ix
}

// CheckReferences finds what the API server accepts but a running cluster would trip over:
// volumes, Secrets and ConfigMaps that are not defined, Services that select no pod or a port no
// container has, MEMEX_* variables that are no setting, addresses naming no Service, images and
// modules that are not built, metrics ports Prometheus is not told about.
func CheckReferences(objects []Object, cfg Config) []error {
	ix := buildIndex(objects)
	var errs []error
	fail := func(o Object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o.Ref(), fmt.Sprintf(format, args...)))
	}
	usedSecrets := map[string]bool{}
	secretOK := func(name string) bool {
		usedSecrets[name] = true
		return ix.secrets[name] || cfg.OperatorSecrets[name]
	}
	for _, o := range objects {
		if d, ok := o.Obj.(*appsv1.Deployment); ok {
			checkSelector(o, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels, fail)
		}
		if s, ok := o.Obj.(*appsv1.StatefulSet); ok {
			checkSelector(o, s.Spec.Selector.MatchLabels, s.Spec.Template.Labels, fail)
			if svc := ix.services[s.Spec.ServiceName]; svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
				fail(o, "serviceName %q is not a headless Service (clusterIP: None) defined here", s.Spec.ServiceName)
			}
		}
	}
	for _, p := range ix.pods {
		volumes := map[string]bool{}
		for name := range p.claims {
			volumes[name] = true
		}
		for _, v := range p.spec.Volumes {
			volumes[v.Name] = true
			switch {
			case v.PersistentVolumeClaim != nil && !ix.pvcs[v.PersistentVolumeClaim.ClaimName]:
				fail(p.owner, "volume %q: PersistentVolumeClaim %q is not defined", v.Name, v.PersistentVolumeClaim.ClaimName)
			case v.ConfigMap != nil && !ix.configMaps[v.ConfigMap.Name]:
				fail(p.owner, "volume %q: ConfigMap %q is not defined", v.Name, v.ConfigMap.Name)
			case v.Secret != nil && !secretOK(v.Secret.SecretName):
				fail(p.owner, "volume %q: Secret %q is neither defined nor listed in secrets.txt", v.Name, v.Secret.SecretName)
			}
		}
		containers := append(append([]corev1.Container{}, p.spec.InitContainers...), p.spec.Containers...)
		for _, c := range containers {
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					fail(p.owner, "container %q mounts %q, which is no volume or volumeClaimTemplate", c.Name, m.Name)
				}
			}
			for _, e := range c.Env {
				checkEnv(p.owner, c.Name, stageOf(c), e, ix, cfg, secretOK, fail)
			}
			for _, from := range c.EnvFrom {
				if from.SecretRef != nil && !secretOK(from.SecretRef.Name) {
					fail(p.owner, "container %q: envFrom Secret %q is not defined", c.Name, from.SecretRef.Name)
				}
				if from.ConfigMapRef != nil && !ix.configMaps[from.ConfigMapRef.Name] {
					fail(p.owner, "container %q: envFrom ConfigMap %q is not defined", c.Name, from.ConfigMapRef.Name)
				}
			}
			checkImage(p.owner, c, cfg, fail)
			checkInternalAuth(p.owner, c, ix, fail)
			checkWeaviate(p.owner, c, cfg, fail)
		}
		checkScrape(p, fail)
	}
	for _, o := range objects {
		switch obj := o.Obj.(type) {
		case *corev1.Service:
			checkService(o, obj, ix, fail)
		case *corev1.ConfigMap:
			// A ConfigMap of settings reaches a process through envFrom: its keys are env vars.
			for key := range obj.Data {
				if _, ok := cfg.Settings[key]; strings.HasPrefix(key, "MEMEX_") && !ok {
					fail(o, "key %s is not a setting of any memex service", key)
				}
			}
		case *policyv1.PodDisruptionBudget:
			if obj.Spec.Selector == nil || !anyPod(ix, obj.Spec.Selector.MatchLabels) {
				fail(o, "selector matches no pod template defined here")
			}
		}
	}
	var stale []string
	for name := range cfg.OperatorSecrets {
		if !usedSecrets[name] {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		errs = append(errs, fmt.Errorf("secrets.txt: Secret %q is listed but no manifest uses it", name))
	}
	return errs
}

func checkSelector(o Object, selector, labels map[string]string, fail func(Object, string, ...any)) {
	if !subset(selector, labels) {
		fail(o, "selector %v does not match its pod template's labels %v", selector, labels)
	}
}

func anyPod(ix index, selector map[string]string) bool {
	for _, p := range ix.pods {
		if subset(selector, p.labels) {
			return true
		}
	}
	return false
}

func subset(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var (
	grpcAddr = regexp.MustCompile(`dns:///([a-z0-9-]+)((?:\.[a-z0-9-]+)*):(\d+)`)
	httpAddr = regexp.MustCompile(`https?://([a-z0-9-]+)((?:\.[a-z0-9-]+)*):(\d+)`)
)

// stageOf is the memex package a container runs (`python -m memex.embedding` → embedding), or "".
func stageOf(c corev1.Container) string {
	args := append(append([]string{}, c.Command...), c.Args...)
	for i := 0; i+1 < len(args); i++ {
		if rest, ok := strings.CutPrefix(args[i+1], "memex."); ok && args[i] == "-m" {
			stage, _, _ := strings.Cut(rest, ".")
			return stage
		}
	}
	return ""
}

func checkEnv(owner Object, container, stage string, e corev1.EnvVar, ix index, cfg Config,
	secretOK func(string) bool, fail func(Object, string, ...any)) {
	if strings.HasPrefix(e.Name, "MEMEX_") {
		reader, ok := cfg.Settings[e.Name]
		switch {
		case !ok:
			fail(owner, "container %q: env %s is not a setting of any memex service", container, e.Name)
		case stage != "" && reader != "shared" && reader != stage:
			fail(owner, "container %q runs memex.%s, but env %s is a setting of memex.%s", container, stage, e.Name, reader)
		}
	}
	if e.ValueFrom != nil {
		if r := e.ValueFrom.SecretKeyRef; r != nil && !secretOK(r.Name) {
			fail(owner, "container %q: env %s: Secret %q is neither defined nor listed in secrets.txt", container, e.Name, r.Name)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil && !ix.configMaps[r.Name] {
			fail(owner, "container %q: env %s: ConfigMap %q is not defined", container, e.Name, r.Name)
		}
	}
	// A gRPC client spreads calls over a Service's pods only when the name resolves to every pod
	// (a headless Service) and the target says dns:/// (open_channel's round_robin does the rest).
	if strings.HasPrefix(e.Name, "MEMEX_") && strings.HasSuffix(e.Name, "_ADDR") && !strings.HasPrefix(e.Value, "dns:///") {
		fail(owner, "container %q: env %s=%q: a gRPC address in the cluster must be dns:///SERVICE:PORT", container, e.Name, e.Value)
	}
	for _, m := range grpcAddr.FindAllStringSubmatch(e.Value, -1) {
		svc := checkAddress(owner, container, e.Name, m, ix, fail)
		if svc != nil && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			fail(owner, "container %q: env %s: Service %q is not headless (clusterIP: None), so round_robin sees one address", container, e.Name, m[1])
		}
	}
	for _, m := range httpAddr.FindAllStringSubmatch(e.Value, -1) {
		if m[2] == "" || strings.Contains(m[2], ".svc") {
			checkAddress(owner, container, e.Name, m, ix, fail)
		}
	}
}

func checkAddress(owner Object, container, env string, m []string, ix index, fail func(Object, string, ...any)) *corev1.Service {
	svc := ix.services[m[1]]
	if svc == nil {
		fail(owner, "container %q: env %s: address %q names no Service defined here", container, env, m[0])
		return nil
	}
	port, _ := strconv.Atoi(m[3])
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == port {
			return svc
		}
	}
	fail(owner, "container %q: env %s: Service %q exposes no port %d", container, env, m[1], port)
	return svc
}

func checkImage(owner Object, c corev1.Container, cfg Config, fail func(Object, string, ...any)) {
	if strings.HasPrefix(c.Image, "memex") && !strings.HasPrefix(c.Image, "memex/") {
		fail(owner, "container %q: image %q: memex's images are memex/<Dockerfile target>:<tag>", c.Name, c.Image)
	}
	if name, ok := strings.CutPrefix(c.Image, "memex/"); ok {
		target, _, _ := strings.Cut(name, ":")
		if !cfg.ImageTargets[target] {
			fail(owner, "container %q: image %q is built by no Dockerfile target", c.Name, c.Image)
		}
		commands := [][]string{append(append([]string{}, c.Command...), c.Args...)}
		for _, probe := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
			if probe != nil && probe.Exec != nil {
				commands = append(commands, probe.Exec.Command)
			}
		}
		for _, args := range commands {
			for i := 0; i+1 < len(args); i++ {
				if args[i] == "-m" && cfg.ModuleExists != nil && !cfg.ModuleExists(args[i+1]) {
					fail(owner, "container %q: python -m %s: no such module in the repository", c.Name, args[i+1])
				}
			}
		}
	}
}

// checkScrape: a pod with a port named "metrics" tells Prometheus where it is.
func checkScrape(p pod, fail func(Object, string, ...any)) {
	for _, c := range p.spec.Containers {
		for _, port := range c.Ports {
			if port.Name != "metrics" {
				continue
			}
			if p.annots["prometheus.io/scrape"] != "true" || p.annots["prometheus.io/port"] != strconv.Itoa(int(port.ContainerPort)) {
				fail(p.owner, "container %q serves metrics on %d but the pod lacks prometheus.io/scrape: \"true\" and prometheus.io/port: \"%d\"",
					c.Name, port.ContainerPort, port.ContainerPort)
			}
		}
	}
}

func checkService(o Object, svc *corev1.Service, ix index, fail func(Object, string, ...any)) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if svc.Spec.ExternalName == "" {
			fail(o, "type ExternalName without externalName")
		}
		return
	}
	if len(svc.Spec.Selector) == 0 {
		if !ix.endpoints[o.Name] {
			fail(o, "no selector and no Endpoints or EndpointSlice of that name")
		}
		return
	}
	var matched []pod
	for _, p := range ix.pods {
		if subset(svc.Spec.Selector, p.labels) {
			matched = append(matched, p)
		}
	}
	if len(matched) == 0 {
		fail(o, "selector %v matches no pod template defined here", svc.Spec.Selector)
		return
	}
	for _, sp := range svc.Spec.Ports {
		target := sp.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(sp.Port)
		}
		for _, p := range matched {
			number, found := containerPort(p.spec, target)
			if !found {
				fail(o, "port %q: targetPort %s is no container port of %s", sp.Name, target.String(), p.owner.Ref())
				continue
			}
			// Clients of a headless Service dial the pods' own addresses, so the Service's port
			// must be the container's.
			if svc.Spec.ClusterIP == corev1.ClusterIPNone && number != sp.Port {
				fail(o, "port %q: headless, so port %d must equal the container port %d", sp.Name, sp.Port, number)
			}
		}
	}
}

func containerPort(spec corev1.PodSpec, target intstr.IntOrString) (int32, bool) {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if (target.Type == intstr.String && p.Name == target.StrVal) ||
				(target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

// checkInternalAuth: under MEMEX_INTERNAL_AUTH=mtls (set in the container or a ConfigMap it reads)
// the TLS folder must be mounted, and no probe may be a kubelet grpc probe, which speaks plaintext
// and cannot connect to a server that requires a client certificate.
func checkInternalAuth(owner Object, c corev1.Container, ix index, fail func(Object, string, ...any)) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			for k, v := range ix.configData[from.ConfigMapRef.Name] {
				env[from.Prefix+k] = v
			}
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["MEMEX_INTERNAL_AUTH"] != "mtls" || !strings.HasPrefix(c.Image, "memex/") {
		return
	}
	dir := env["MEMEX_INTERNAL_TLS_DIR"]
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (dir != "" && strings.TrimSuffix(m.MountPath, "/") == strings.TrimSuffix(dir, "/"))
	}
	if !mounted {
		fail(owner, "container %q: MEMEX_INTERNAL_AUTH=mtls but MEMEX_INTERNAL_TLS_DIR %q is not a mount of the container", c.Name, dir)
	}
	probes := []struct {
		name  string
		probe *corev1.Probe
	}{{"startup", c.StartupProbe}, {"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}}
	for _, p := range probes {
		if name, probe := p.name, p.probe; probe != nil && probe.GRPC != nil {
			fail(owner, "container %q: the %s probe is a plaintext grpc probe, which cannot connect under MEMEX_INTERNAL_AUTH=mtls (use exec: python -m memex.shared.health)", c.Name, name)
		}
	}
}

// checkWeaviate: a Weaviate container runs the version memex tests against, and every variable
// it sets is one Weaviate's configuration code names (a misspelt CLUSTER_* or RAFT_* would be
// ignored silently, and the nodes would never form a cluster).
func checkWeaviate(owner Object, c corev1.Container, cfg Config, fail func(Object, string, ...any)) {
	repo, tag, _ := strings.Cut(c.Image, ":")
	if !strings.HasSuffix(repo, "semitechnologies/weaviate") {
		return
	}
	if cfg.WeaviateVersion != "" && tag != cfg.WeaviateVersion {
		fail(owner, "container %q: image %q, but memex builds and tests Weaviate %s", c.Name, c.Image, cfg.WeaviateVersion)
	}
	for _, e := range c.Env {
		if !cfg.WeaviateEnv[e.Name] {
			fail(owner, "container %q: env %s is not named in Weaviate's configuration code", c.Name, e.Name)
		}
	}
}
