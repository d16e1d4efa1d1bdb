// Package harness is test support: it starts sidecar-ssr's real processes (the renderer on
// the pinned Node, the edge binary, scripts), keeps what they print and waits on it. The
// edge's end-to-end tests and the demo shop's tests use it; the shop is another module,
// hence a package that is not internal. Nothing outside tests imports it.
package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/poll"
)

// RepoRoot is the repository's root directory.
var RepoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

// NodeBinary is the pinned Node the renderer runs on, installed under renderer/ by make.
var NodeBinary = filepath.Join(RepoRoot, "renderer", "node_modules", ".bin", "node")

// Check returns an error naming the first of paths that does not exist, and how to make it:
// a checkout without the builds fails once, saying why.
func Check(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s is missing: run the tests through make (make test-e2e, make test-shop), which builds and installs what they need", p)
		}
	}
	return nil
}

// NodeFlags are the flags every launcher gives the renderer's node (renderer/node-flags.json).
func NodeFlags(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot, "renderer", "node-flags.json"))
	var flags []string
	if err == nil {
		err = json.Unmarshal(b, &flags)
	}
	if err != nil {
		t.Fatalf("renderer/node-flags.json: %v", err)
	}
	return flags
}

// Main runs a package's tests once every path in need exists, with the edge binary built
// for them (race detector on, and the build tags given) into a temporary directory: *edge
// is set to its path. A TestMain calls it; it exits the process.
func Main(m *testing.M, edge *string, tags []string, need ...string) {
	os.Exit(func() int {
		if err := Check(need...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		dir, err := os.MkdirTemp("", "sidecar-ssr-edge-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		*edge = filepath.Join(dir, "edge")
		build := exec.Command("go", "build", "-race", "-tags", strings.Join(tags, ","), "-o", *edge, "./cmd/edge")
		build.Dir = filepath.Join(RepoRoot, "edge")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the edge:", err)
			return 1
		}
		return m.Run()
	}())
}

// StartRenderer starts the renderer listening on the unix socket, with two workers, its HTTP
// listener on a free port and env added to the environment, and waits until every worker is
// warm.
func StartRenderer(t testing.TB, socket string, env ...string) *Process {
	t.Helper()
	cmd := exec.Command(NodeBinary, append(NodeFlags(t), filepath.Join(RepoRoot, "renderer", "src", "main.js"))...)
	cmd.Dir = RepoRoot
	cmd.Env = append(os.Environ(),
		"SSR_RENDERER_GRPC_ADDRESS=unix://"+socket,
		"SSR_RENDERER_HTTP_LISTEN=127.0.0.1:0",
		"SSR_RENDERER_THREADS=2",
	)
	cmd.Env = append(cmd.Env, env...)
	p := Start(t, "renderer", cmd)
	p.WaitLog(map[string]string{"msg": "ready"})
	return p
}

// Process is a started command whose output lines are kept, JSON ones also parsed.
type Process struct {
	Cmd  *exec.Cmd
	Name string // as the test's messages call it
	t    testing.TB
	exit chan struct{} // closed once the command has exited and Cmd.ProcessState is set

	mu     sync.Mutex
	lines  []string         // guarded by mu: stdout and stderr, in order
	fields []map[string]any // guarded by mu: each line's JSON object, nil for other lines
}

// Start starts cmd with stdout and stderr collected. When the test ends the process is
// killed (its whole group when it leads one, as a script does), and its output is logged if
// the test failed.
func Start(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, Name: name, t: t, exit: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var fields map[string]any
			json.Unmarshal(sc.Bytes(), &fields)
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.fields = append(p.fields, fields)
			p.mu.Unlock()
		}
		cmd.Wait()
		close(p.exit)
	}()
	t.Cleanup(func() {
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		p.Signal(syscall.SIGKILL)
		<-p.exit
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

// Output is everything the process has printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// Signal sends sig to the process unless it has exited.
func (p *Process) Signal(sig syscall.Signal) {
	select {
	case <-p.exit:
	default:
		p.Cmd.Process.Signal(sig)
	}
}

// Kill kills the process and returns once it is gone.
func (p *Process) Kill() {
	p.Signal(syscall.SIGKILL)
	<-p.exit
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exit }

// WaitExit waits up to timeout for the process to exit and returns its exit code.
func (p *Process) WaitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exit:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.t.Fatalf("%s still running %s after being asked to stop:\n%s", p.Name, timeout, p.Output())
		return -1
	}
}

// WaitLine returns the first line match accepts, waiting for it (poll.Until); the test
// fails if the process exits first.
func (p *Process) WaitLine(what string, match func(string) bool) string {
	p.t.Helper()
	line, _ := p.wait(what, func(line string, _ map[string]any) bool { return match(line) })
	return line
}

// WaitJSON is WaitLine for JSON lines, returning the line's fields.
func (p *Process) WaitJSON(what string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	_, fields := p.wait(what, func(_ string, fields map[string]any) bool { return fields != nil && match(fields) })
	return fields
}

// WaitLog waits for a JSON log line whose fields include all of want (compared as text).
func (p *Process) WaitLog(want map[string]string) map[string]any {
	p.t.Helper()
	return p.WaitJSON(fmt.Sprintf("log %v", want), func(fields map[string]any) bool {
		for k, v := range want {
			if fmt.Sprint(fields[k]) != v {
				return false
			}
		}
		return true
	})
}

// wait returns the first line match accepts, waiting for it; the test fails if the process
// exits without printing one. Its output is logged when the test fails (Start).
func (p *Process) wait(what string, match func(string, map[string]any) bool) (line string, fields map[string]any) {
	p.t.Helper()
	poll.Until(p.t, p.Name+"'s "+what, func() bool {
		p.t.Helper()
		exited := false
		select {
		case <-p.exit: // asked first: once it has exited, every line it printed is kept
			exited = true
		default:
		}
		var found bool
		line, fields, found = p.find(match)
		if !found && exited {
			p.t.Fatalf("%s exited while waiting for %s:\n%s", p.Name, what, p.Output())
		}
		return found
	})
	return line, fields
}

// find returns the first line match accepts, if the process has printed one.
func (p *Process) find(match func(string, map[string]any) bool) (string, map[string]any, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, line := range p.lines {
		if fields := p.fields[i]; match(line, fields) {
			return line, fields, true
		}
	}
	return "", nil, false
}

// HasLog reports whether the process has logged a line with this msg.
func (p *Process) HasLog(msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fields := range p.fields {
		if fields != nil && fields["msg"] == msg {
			return true
		}
	}
	return false
}

// Address is where the process's listener of this name listens, once it has logged it.
func (p *Process) Address(listener string) string {
	p.t.Helper()
	return fmt.Sprint(p.WaitLog(map[string]string{"msg": "listening", "listener": listener})["address"])
}

// HTTPURL is path on the process's HTTP listener (the renderer's /metrics, /readyz).
func (p *Process) HTTPURL(path string) string { return "http://" + p.Address("http") + path }

// WaitUntil is poll.Until, the tests' one way to wait, for the shop's tests: they are
// another module, which cannot import edge/internal/poll. The edge's own tests call poll.Until.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, what, cond)
}

// FreePort is a loopback port that was free a moment ago, for a process that must be told
// its port beforehand.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// NoRedirects is the client of Get: a redirect is an answer the tests look at. Every
// response it returns has a Cache-Status a structured-field parser reads as sent
// (CheckCacheStatus); one that does not fails the request.
var NoRedirects = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     cacheStatusChecked{http.DefaultTransport},
}

// cacheStatusChecked fails a response whose Cache-Status CheckCacheStatus refuses.
type cacheStatusChecked struct{ next http.RoundTripper }

func (c cacheStatusChecked) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if err := CheckCacheStatus(resp.Header.Values("Cache-Status")); err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL, err)
	}
	return resp, nil
}

// CheckCacheStatus reports a Cache-Status (RFC 9211) that is not a structured-field list
// (RFC 9651), or one of whose members names a parameter twice: a parser keeps only the
// last, so whatever the first said is lost to every cache and client that reads it.
func CheckCacheStatus(values []string) error {
	if len(values) == 0 {
		return nil
	}
	list, err := httpsfv.UnmarshalList(values)
	if err != nil {
		return fmt.Errorf("Cache-Status %q is not a structured-field list: %w", values, err)
	}
	// The members as sent: none of the edge's holds a string, where a comma could hide.
	raw := strings.Split(strings.Join(values, ","), ",")
	for i, member := range list {
		item, ok := member.(httpsfv.Item)
		if !ok || i >= len(raw) {
			return fmt.Errorf("Cache-Status %q: member %d is not an item", values, i)
		}
		if sent, parsed := strings.Count(raw[i], ";"), len(item.Params.Names()); sent != parsed {
			return fmt.Errorf("Cache-Status %q: member %q names a parameter twice (%d sent, %d parsed)", values, strings.TrimSpace(raw[i]), sent, parsed)
		}
	}
	return nil
}

// Response is a response whose body has been read into Text.
type Response struct {
	*http.Response
	Text string
}

// Get GETs url with NoRedirects and reads the body; an error fails the test.
func Get(t testing.TB, url string) Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Do(t, req)
}

// Do sends req with NoRedirects and reads the body; an error fails the test.
func Do(t testing.TB, req *http.Request) Response {
	t.Helper()
	resp, err := NoRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{resp, string(body)}
}

// RendererConfig is a config for the renderer's own parser: the shared file's text and
// SSR_RENDERER_* variables.
type RendererConfig struct {
	Text string            `json:"text"`
	Env  map[string]string `json:"env"`
}

// ParsedRendererConfig is what the renderer's parser made of a RendererConfig: the config it
// would run with, or, when it refuses it, why.
type ParsedRendererConfig struct {
	Config  map[string]any
	Problem string
}

// ParseRendererConfigs runs the renderer's parseConfig (renderer/src/config.js) on the
// pinned Node over each of configs, in one process, and returns what it made of each.
func ParseRendererConfigs(t testing.TB, configs []RendererConfig) []ParsedRendererConfig {
	t.Helper()
	const script = `
const [configJs, input] = process.argv.slice(1);
const { parseConfig } = await import(configJs);
console.log(JSON.stringify(JSON.parse(input).map(({ text, env }) => {
  try {
    return { config: parseConfig(text, { env: env ?? {}, cwd: '/' }), problem: '' };
  } catch (err) {
    return { problem: err.message };
  }
})));
`
	input, err := json.Marshal(configs)
	if err != nil {
		t.Fatal(err)
	}
	configJs := "file://" + filepath.Join(RepoRoot, "renderer", "src", "config.js")
	out, err := exec.Command(NodeBinary, "--input-type=module", "-e", script, configJs, string(input)).Output()
	if err != nil {
		t.Fatalf("asking renderer/src/config.js: %v", err)
	}
	var parsed []ParsedRendererConfig
	if err := json.Unmarshal(out, &parsed); err != nil || len(parsed) != len(configs) {
		t.Fatalf("renderer/src/config.js's answer %q: %v", out, err)
	}
	return parsed
}
