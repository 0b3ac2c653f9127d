package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tairkv/tair/internal/testcluster"
)

// The deployment files (deploy/) start `tair <role>` with flags and YAML
// config files. These tests check them against the binary itself: every
// flag they pass and every key of their config files is one `tair <role>`
// accepts with a value it parses (the binary is run with them and --help,
// which parses every flag and stops), the YAML parses, and what refers to
// something else (a config file in a ConfigMap, an env var, a compose
// service, the Dockerfile's binary) exists. Docker and Kubernetes are not
// needed: nothing is built or applied.

var tairRoles = map[string]bool{"configserver": true, "dataserver": true, "proxy": true}

// deployChecker runs the built binary.
type deployChecker struct {
	t     *testing.T
	bin   string
	flags map[string]map[string]bool // role -> flag names
}

func newDeployChecker(t *testing.T) *deployChecker {
	d := &deployChecker{t: t, bin: testcluster.Binary(t), flags: map[string]map[string]bool{}}
	re := regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z0-9-]+)`)
	for role := range tairRoles {
		out, err := exec.Command(d.bin, role, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("tair %s --help: %v\n%s", role, err, out)
		}
		d.flags[role] = map[string]bool{}
		for _, m := range re.FindAllStringSubmatch(string(out), -1) {
			d.flags[role][m[1]] = true
		}
		if !d.flags[role]["listen"] || !d.flags[role]["config"] {
			t.Fatalf("tair %s --help lists no --listen/--config: the flag parser is broken\n%s", role, out)
		}
	}
	return d
}

// accepts checks that `tair role args...` parses: each flag is one of
// the role's and its value parses.
func (d *deployChecker) accepts(where, role string, args []string) {
	d.t.Helper()
	if !tairRoles[role] {
		d.t.Errorf("%s: %q is not a tair role (configserver, dataserver, proxy)", where, role)
		return
	}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue // a value after "--flag value"
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !d.flags[role][name] {
			d.t.Errorf("%s: tair %s has no flag --%s", where, role, name)
		}
	}
	cmd := exec.Command(d.bin, append(append([]string{role}, args...), "--help")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		d.t.Errorf("%s: tair %s %s: %v\n%s", where, role, strings.Join(args, " "), err, firstLines(out, 3))
	}
}

// acceptsConfig checks a role's YAML config file: every key a flag of
// the role, every value one the flag parses (passed as --key=value).
func (d *deployChecker) acceptsConfig(where, role string, data []byte) {
	d.t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		d.t.Errorf("%s: %v", where, err)
		return
	}
	if len(m) == 0 {
		d.t.Errorf("%s: an empty config", where)
		return
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !d.flags[role][k] || k == "config" {
			d.t.Errorf("%s: %q is not a setting of tair %s (unknown keys make it exit)", where, k, role)
			continue
		}
		v, err := flagValue(m[k])
		if err != nil {
			d.t.Errorf("%s: %s: %v", where, k, err)
			continue
		}
		args = append(args, "--"+k+"="+v)
	}
	d.accepts(where, role, args)
}

// flagValue renders a YAML value as the flag's command-line value, as
// viper hands it to the flag: lists joined with commas, maps as k=v.
func flagValue(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", fmt.Errorf("no value")
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			s, err := flagValue(x)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			s, err := flagValue(v[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, k+"="+s)
		}
		return strings.Join(parts, ","), nil
	}
	return fmt.Sprint(v), nil
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// flagArg returns the value of --name in args ("--name=v" or "--name v").
func flagArg(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// readYAMLDocs decodes every document of a YAML file.
func readYAMLDocs(t *testing.T, file string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if m != nil {
			docs = append(docs, m)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML document", file)
	}
	return docs
}

// TestDeployConfigFiles: deploy/<role>.yaml (what the systemd units read
// as /etc/tair/<role>.yaml) hold only settings the role has.
func TestDeployConfigFiles(t *testing.T) {
	d := newDeployChecker(t)
	for role := range tairRoles {
		file := filepath.Join("..", "deploy", role+".yaml")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d.acceptsConfig(file, role, data)
	}
}

// TestDeploySystemdUnits: each unit's ExecStart runs the tair binary as
// its role with flags the binary accepts, and its --config is one of
// deploy/'s config files (installed under /etc/tair) with keys it accepts.
func TestDeploySystemdUnits(t *testing.T) {
	d := newDeployChecker(t)
	units, err := filepath.Glob(filepath.Join("..", "deploy", "systemd", "*.service"))
	if err != nil || len(units) != 3 {
		t.Fatalf("deploy/systemd: %v units (%v), want one per role", units, err)
	}
	for _, unit := range units {
		role := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(unit), "tair-"), ".service")
		f, err := os.Open(unit)
		if err != nil {
			t.Fatal(err)
		}
		var execs []string
		section := ""
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			ln := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(ln, "[") {
				section = ln
			}
			if v, ok := strings.CutPrefix(ln, "ExecStart="); ok {
				if section != "[Service]" {
					t.Errorf("%s: ExecStart outside [Service]", unit)
				}
				execs = append(execs, v)
			}
		}
		f.Close()
		if len(execs) != 1 {
			t.Errorf("%s: %d ExecStart lines, want 1", unit, len(execs))
			continue
		}
		argv := strings.Fields(strings.TrimLeft(execs[0], "-@:+!"))
		if len(argv) < 2 || !filepath.IsAbs(argv[0]) || filepath.Base(argv[0]) != "tair" {
			t.Errorf("%s: ExecStart=%s does not run an absolute path to the tair binary", unit, execs[0])
			continue
		}
		if argv[1] != role {
			t.Errorf("%s: runs tair %s, want tair %s", unit, argv[1], role)
		}
		args := argv[2:]
		if cfg, ok := flagArg(args, "config"); ok {
			if filepath.Dir(cfg) != "/etc/tair" {
				t.Errorf("%s: --config %s is not one of deploy/'s files installed in /etc/tair", unit, cfg)
			}
			local := filepath.Join("..", "deploy", filepath.Base(cfg))
			data, err := os.ReadFile(local)
			if err != nil {
				t.Errorf("%s: --config %s: no %s to install there: %v", unit, cfg, local, err)
			} else {
				d.acceptsConfig(local+" (as "+cfg+")", role, data)
			}
			args = replaceFlag(args, "config", local)
		}
		d.accepts(unit, role, args)
	}
}

// replaceFlag sets --name's value in args.
func replaceFlag(args []string, name, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if strings.HasPrefix(a, "--"+name+"=") {
			out[i] = "--" + name + "=" + value
		} else if a == "--"+name && i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}

// TestDeployCompose: deploy/docker-compose.yml has etcd, two
// configservers, three dataservers and a proxy, built from
// deploy/Dockerfile; their commands are flags tair accepts; every
// --configserver and --etcd address names a service that listens there;
// every dataserver has its own address and volume; the Prometheus
// targets are the services' --http addresses.
func TestDeployCompose(t *testing.T) {
	d := newDeployChecker(t)
	file := filepath.Join("..", "deploy", "docker-compose.yml")
	doc := readYAMLDocs(t, file)[0]
	services, _ := doc["services"].(map[string]any)
	if len(services) == 0 {
		t.Fatalf("%s: no services", file)
	}
	type svc struct {
		name, role string
		args       []string
	}
	byRole := map[string][]svc{}
	listens := map[string]string{} // host:port -> service
	https := map[string]string{}   // service -> --http port
	volumes := map[string]bool{}
	if v, ok := doc["volumes"].(map[string]any); ok {
		for k := range v {
			volumes[k] = true
		}
	}
	etcdSvcs := map[string]bool{}
	var initialClusters []string
	for _, name := range slices.Sorted(maps.Keys(services)) {
		s, _ := services[name].(map[string]any)
		where := file + ": " + name
		var argv []string
		switch c := s["command"].(type) {
		case []any:
			for _, x := range c {
				argv = append(argv, fmt.Sprint(x))
			}
		case string:
			argv = strings.Fields(c)
		}
		if img, _ := s["image"].(string); strings.Contains(img, "etcd") {
			etcdSvcs[name] = true
			for _, a := range argv {
				if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
					initialClusters = append(initialClusters, where+": "+v)
				}
				if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok && !strings.Contains(v, ":2379") {
					t.Errorf("%s: etcd listens for clients on %s, not 2379", where, v)
				}
			}
			continue
		}
		if img, _ := s["image"].(string); !strings.HasPrefix(img, "tair") {
			continue
		}
		b, _ := s["build"].(map[string]any)
		if b == nil {
			t.Errorf("%s: a tair service without a build", where)
		} else {
			df := filepath.Join(filepath.Dir(file), fmt.Sprint(b["context"]), fmt.Sprint(b["dockerfile"]))
			if _, err := os.Stat(df); err != nil {
				t.Errorf("%s: build: %v", where, err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), fmt.Sprint(b["context"]), "go.mod")); err != nil {
				t.Errorf("%s: the build context is not the module's root: %v", where, err)
			}
		}
		if len(argv) == 0 {
			t.Errorf("%s: no command (the image's entrypoint is tair; the command names the role)", where)
			continue
		}
		role, args := argv[0], argv[1:]
		d.accepts(where, role, args)
		byRole[role] = append(byRole[role], svc{name, role, args})
		l, ok := flagArg(args, "listen")
		if !ok {
			t.Errorf("%s: no --listen (the default binds 127.0.0.1, unreachable from the other containers)", where)
			continue
		}
		host, port, err := net.SplitHostPort(l)
		if err != nil {
			t.Errorf("%s: --listen=%s: %v", where, l, err)
			continue
		}
		if role != "proxy" && host != name {
			t.Errorf("%s: --listen=%s: a %s must listen on its service name, the address the others dial", where, l, role)
		}
		if prev, dup := listens[l]; dup {
			t.Errorf("%s: --listen=%s, as %s", where, l, prev)
		}
		listens[net.JoinHostPort(name, port)] = name
		if h, ok := flagArg(args, "http"); ok {
			_, hp, _ := net.SplitHostPort(h)
			https[name] = hp
		} else {
			t.Errorf("%s: no --http (the default binds 127.0.0.1: no /metrics from outside)", where)
		}
		if role == "dataserver" {
			vs, _ := s["volumes"].([]any)
			dir, _ := flagArg(args, "dir")
			found := false
			for _, v := range vs {
				src, dst, _ := strings.Cut(fmt.Sprint(v), ":")
				if !volumes[src] {
					t.Errorf("%s: volume %s is not declared", where, src)
				}
				if dir != "" && (dir == dst || strings.HasPrefix(dir, dst+"/")) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: --dir=%s is not on a volume", where, dir)
			}
		}
	}
	// etcd: three members (the configservers' state survives one's
	// loss), each starting with all three in its initial cluster.
	if len(etcdSvcs) != 3 {
		t.Errorf("%s: %d etcd services, want a 3-member etcd", file, len(etcdSvcs))
	}
	for _, ic := range initialClusters {
		for m := range etcdSvcs {
			if !strings.Contains(ic, m+"=http://"+m+":2380") {
				t.Errorf("%s: the initial cluster lacks member %s", ic, m)
			}
		}
	}
	for role, n := range map[string]int{"configserver": 2, "dataserver": 3, "proxy": 2} {
		if len(byRole[role]) != n {
			t.Errorf("%s: %d %s services, want %d", file, len(byRole[role]), role, n)
		}
	}
	for _, ss := range byRole {
		for _, s := range ss {
			where := file + ": " + s.name
			if v, ok := flagArg(s.args, "configserver"); ok {
				for _, a := range strings.Split(v, ",") {
					if listens[a] == "" || !strings.HasPrefix(listens[a], "configserver") {
						t.Errorf("%s: --configserver %s is no configserver service's --listen", where, a)
					}
				}
			} else if s.role != "configserver" {
				t.Errorf("%s: no --configserver (the default is 127.0.0.1:5198)", where)
			}
			if v, ok := flagArg(s.args, "etcd"); ok {
				for _, a := range strings.Split(v, ",") {
					if h, p, _ := net.SplitHostPort(a); !etcdSvcs[h] || p != "2379" {
						t.Errorf("%s: --etcd %s is not an etcd service", where, a)
					}
				}
			}
		}
	}
	if len(byRole["dataserver"]) > 0 {
		for _, s := range byRole["dataserver"] {
			if v, _ := flagArg(s.args, "engine"); v == "mdb" || v == "rdb" || v == "" {
				t.Errorf("%s: %s: an in-memory engine loses the data on restart; the compose file keeps data on volumes", file, s.name)
			}
		}
	}

	// Prometheus scrapes each service's --http port (deploy/prometheus).
	prom := readYAMLDocs(t, filepath.Join("..", "deploy", "prometheus", "prometheus.yml"))[0]
	jobs, _ := prom["scrape_configs"].([]any)
	targets := 0
	for _, j := range jobs {
		jm, _ := j.(map[string]any)
		job := fmt.Sprint(jm["job_name"])
		role := strings.TrimPrefix(job, "tair-")
		sc, _ := jm["static_configs"].([]any)
		for _, s := range sc {
			ts, _ := s.(map[string]any)["targets"].([]any)
			for _, tg := range ts {
				targets++
				host, port, err := net.SplitHostPort(fmt.Sprint(tg))
				if err != nil {
					t.Errorf("prometheus.yml: job %s: target %v: %v", job, tg, err)
					continue
				}
				found := false
				for _, s := range byRole[role] {
					if s.name == host && https[host] == port {
						found = true
					}
				}
				if !found {
					t.Errorf("prometheus.yml: job %s: target %s is no %s service's --http", job, tg, role)
				}
			}
		}
	}
	if targets != 6 {
		t.Errorf("prometheus.yml: %d targets, want the 6 tair services", targets)
	}
	if rf, _ := prom["rule_files"].([]any); len(rf) != 1 || rf[0] != "alerts.yml" {
		t.Errorf("prometheus.yml: rule_files %v, want [alerts.yml]", rf)
	}
}

// TestDeployKubernetes: deploy/k8s's manifests parse; the tair
// containers' args are flags tair accepts once Kubernetes substitutes the
// $(VAR)s, which their env must declare; their --config is a key of a
// ConfigMap mounted at that path, whose keys tair accepts; dataservers
// run as a StatefulSet with their data on a volume claim; the
// kustomization lists every manifest.
func TestDeployKubernetes(t *testing.T) {
	d := newDeployChecker(t)
	dir := filepath.Join("..", "deploy", "k8s")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/k8s: %v %v", files, err)
	}
	type object struct {
		file string
		m    map[string]any
	}
	var objs []object
	var kustom map[string]any
	for _, f := range files {
		for _, m := range readYAMLDocs(t, f) {
			if m["kind"] == "Kustomization" {
				kustom = m
				continue
			}
			if m["apiVersion"] == nil || m["kind"] == nil {
				t.Errorf("%s: a document without apiVersion and kind", f)
			}
			objs = append(objs, object{f, m})
		}
	}
	if kustom == nil {
		t.Fatalf("%s: no kustomization.yaml", dir)
	}
	listed := map[string]bool{}
	res, _ := kustom["resources"].([]any)
	for _, r := range res {
		listed[fmt.Sprint(r)] = true
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprint(r))); err != nil {
			t.Errorf("kustomization.yaml: %v", err)
		}
	}
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !listed[b] {
			t.Errorf("kustomization.yaml does not list %s", b)
		}
	}
	get := func(m any, keys ...string) any {
		for _, k := range keys {
			mm, ok := m.(map[string]any)
			if !ok {
				return nil
			}
			m = mm[k]
		}
		return m
	}
	configMaps := map[string]map[string]any{}
	services := map[string]bool{}
	for _, o := range objs {
		name := fmt.Sprint(get(o.m, "metadata", "name"))
		switch o.m["kind"] {
		case "ConfigMap":
			data, _ := o.m["data"].(map[string]any)
			configMaps[name] = data
		case "Service":
			services[name] = true
		}
	}
	kinds := map[string]string{}
	varRef := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, o := range objs {
		kind := fmt.Sprint(o.m["kind"])
		if kind != "Deployment" && kind != "StatefulSet" {
			continue
		}
		name := fmt.Sprint(get(o.m, "metadata", "name"))
		pod := get(o.m, "spec", "template", "spec")
		vols := map[string]string{} // volume -> ConfigMap ("" for others)
		if vs, ok := get(pod, "volumes").([]any); ok {
			for _, v := range vs {
				cm := get(v, "configMap", "name")
				vols[fmt.Sprint(get(v, "name"))] = ""
				if cm != nil {
					vols[fmt.Sprint(get(v, "name"))] = fmt.Sprint(cm)
				}
			}
		}
		claims := map[string]bool{}
		if vcts, ok := get(o.m, "spec", "volumeClaimTemplates").([]any); ok {
			for _, v := range vcts {
				claims[fmt.Sprint(get(v, "metadata", "name"))] = true
			}
		}
		if sn := get(o.m, "spec", "serviceName"); sn != nil && !services[fmt.Sprint(sn)] {
			t.Errorf("%s: %s %s: serviceName %v is no Service", o.file, kind, name, sn)
		}
		containers, _ := get(pod, "containers").([]any)
		for _, c := range containers {
			if img := fmt.Sprint(get(c, "image")); img != "tair" && !strings.HasPrefix(img, "tair:") {
				continue
			}
			where := o.file + ": " + kind + " " + name
			if get(c, "command") != nil {
				t.Errorf("%s: command overrides the image's tair entrypoint; pass the role in args", where)
			}
			env := map[string]bool{}
			if es, ok := get(c, "env").([]any); ok {
				for _, e := range es {
					env[fmt.Sprint(get(e, "name"))] = true
				}
			}
			var args []string
			raw, _ := get(c, "args").([]any)
			for _, a := range raw {
				s := fmt.Sprint(a)
				for _, m := range varRef.FindAllStringSubmatch(s, -1) {
					if !env[m[1]] {
						t.Errorf("%s: %s refers to $(%s), which the container's env does not declare (Kubernetes leaves it as written)", where, s, m[1])
					}
				}
				args = append(args, varRef.ReplaceAllString(s, "x$1"))
			}
			if len(args) == 0 {
				t.Errorf("%s: no args: the role is the first", where)
				continue
			}
			role := args[0]
			kinds[role] = kind
			args = args[1:]
			if cfg, ok := flagArg(args, "config"); ok {
				found := false
				mounts, _ := get(c, "volumeMounts").([]any)
				for _, m := range mounts {
					if fmt.Sprint(get(m, "mountPath")) != path.Dir(cfg) {
						continue
					}
					cm := vols[fmt.Sprint(get(m, "name"))]
					data, ok := configMaps[cm][path.Base(cfg)]
					if !ok {
						t.Errorf("%s: --config %s: ConfigMap %q mounted at %s has no key %s", where, cfg, cm, path.Dir(cfg), path.Base(cfg))
						break
					}
					found = true
					tmp := filepath.Join(t.TempDir(), path.Base(cfg))
					if err := os.WriteFile(tmp, []byte(fmt.Sprint(data)), 0o644); err != nil {
						t.Fatal(err)
					}
					d.acceptsConfig(where+" ConfigMap "+cm+" "+path.Base(cfg), role, []byte(fmt.Sprint(data)))
					args = replaceFlag(args, "config", tmp)
				}
				if !found {
					t.Errorf("%s: --config %s is on no mounted ConfigMap", where, cfg)
				}
			}
			d.accepts(where, role, args)
			if role == "dataserver" {
				mounts, _ := get(c, "volumeMounts").([]any)
				onClaim := false
				for _, m := range mounts {
					if claims[fmt.Sprint(get(m, "name"))] && fmt.Sprint(get(m, "mountPath")) == "/var/lib/tair" {
						onClaim = true
					}
				}
				if !onClaim {
					t.Errorf("%s: /var/lib/tair (the image's data directory) is not on a volume claim", where)
				}
			}
		}
	}
	for role, kind := range map[string]string{"configserver": "Deployment", "dataserver": "StatefulSet", "proxy": "Deployment"} {
		if kinds[role] != kind {
			t.Errorf("deploy/k8s: the %ss run as %q, want a %s", role, kinds[role], kind)
		}
	}
	for _, svc := range []string{"tair-configserver", "tair-dataserver", "tair-proxy"} {
		if !services[svc] {
			t.Errorf("deploy/k8s: no Service %s", svc)
		}
	}
}

// TestDeployDockerfile: deploy/Dockerfile builds ./cmd/tair with a Go at
// least go.mod's, and its entrypoint is the binary it copies into the
// final stage.
func TestDeployDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(mod)
	if want == nil {
		t.Fatal("go.mod: no go line")
	}
	// Join continued lines.
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	var froms []string
	var built, copied, entry string
	stages := map[string]bool{}
	for _, ln := range strings.Split(text, "\n") {
		f := strings.Fields(ln)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			froms = append(froms, f[1])
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				stages[f[3]] = true
			}
		case "RUN":
			if m := regexp.MustCompile(`go build .*-o (\S+) \./cmd/tair\b`).FindStringSubmatch(ln); m != nil {
				built = m[1]
			}
		case "COPY":
			if len(f) >= 4 && strings.HasPrefix(f[1], "--from=") && f[len(f)-2] == built {
				if !stages[strings.TrimPrefix(f[1], "--from=")] {
					t.Errorf("Dockerfile: %s copies from an unknown stage", ln)
				}
				copied = f[len(f)-1]
			}
		case "ENTRYPOINT":
			if m := regexp.MustCompile(`^ENTRYPOINT \["([^"]+)"`).FindStringSubmatch(strings.TrimSpace(ln)); m != nil {
				entry = m[1]
			}
		}
	}
	if len(froms) < 2 {
		t.Errorf("Dockerfile: %d stages, want a build stage and a small final one", len(froms))
	} else {
		m := regexp.MustCompile(`^golang:(\d+)\.(\d+)`).FindStringSubmatch(froms[0])
		if m == nil {
			t.Errorf("Dockerfile: the build stage is FROM %s, not golang:X.Y", froms[0])
		} else {
			have := [2]int{atoi(m[1]), atoi(m[2])}
			need := [2]int{atoi(string(want[1])), atoi(string(want[2]))}
			if have[0] < need[0] || have[0] == need[0] && have[1] < need[1] {
				t.Errorf("Dockerfile: golang:%s.%s is older than go.mod's go %s.%s", m[1], m[2], want[1], want[2])
			}
		}
	}
	if built == "" || copied == "" || entry != copied {
		t.Errorf("Dockerfile: builds %q, copies it to %q, runs %q: want ./cmd/tair built, copied and run", built, copied, entry)
	}
	if _, err := os.Stat(filepath.Join("..", "cmd", "tair")); err != nil {
		t.Error(err)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
