package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/htmlcache"
)

// builds identify the code that renders, besides the client build (which the cache key
// holds): a stored page records them, and one rendered by other code (the Go server's
// loaders, the server bundle's load()) is not served: after a deploy, new replicas do not
// serve the old code's pages from the shared store, and after the renderer reloads its
// bundle, pages of the old file are not served. They are not in the key, since the
// bundle's id is known only once the renderer answers: keys would move then.
type builds struct {
	server string
	// bundle is the id of the renderer's bundle: the one its latest answer (a render or
	// ListPages) named; nil until it answered.
	bundle atomic.Pointer[string]
	// client is the client build its latest render named (its bundle's clientBuildId); nil
	// until one named one.
	client atomic.Pointer[string]
}

func (b *builds) current() (server, bundle string) {
	if b == nil {
		return "", ""
	}
	if p := b.bundle.Load(); p != nil {
		bundle = *p
	}
	return b.server, bundle
}

// rendered takes the bundle id a render's answer names (empty: none, a page the Go loader
// answered) as the current one: the first render of a reloaded bundle makes the old one's
// pages stale at once.
func (b *builds) rendered(bundle string) {
	if b == nil || bundle == "" {
		return
	}
	if p := b.bundle.Load(); p == nil || *p != bundle {
		b.bundle.Store(&bundle)
	}
}

// stamp records on e the code that rendered it: bundle, the id its answer named, or when
// it named none, the current one.
func (b *builds) stamp(e *htmlcache.Entry, bundle string) {
	e.ServerBuild, e.Bundle = b.current()
	if bundle != "" {
		e.Bundle = bundle
	}
}

// matches reports whether e was rendered by this code. A bundle id not known on either side
// (the renderer had not answered yet) does not count against it.
func (b *builds) matches(e *htmlcache.Entry) bool {
	server, bundle := b.current()
	return e.ServerBuild == server && (e.Bundle == "" || bundle == "" || e.Bundle == bundle)
}

// clientBuild is id, the client build a render's bundle was built with, noted when the
// document cannot link it (no manifest in assets_dir named it, or its files are gone): counted, and
// logged once an id, for that page then links the current build, which its HTML may not
// hydrate with. It is the renderer's latest, for readiness (unlinked).
func (d *deps) clientBuild(id string) string {
	if id == "" {
		return id
	}
	if d.build != nil {
		d.build.client.Store(&id)
	}
	if d.shell.Links(id) {
		return id
	}
	d.metrics.clientBuildUnknown.Inc()
	if _, said := d.unknownBuilds.LoadOrStore(id, time.Now()); !said {
		d.log.Warn("a render names a client build that assets_dir does not hold (no manifest named it, or its files are gone): its page links the current build instead, which may not hydrate it (deploy the client build with its server bundle)",
			"client_build", id, "current", d.shell.BuildID())
	}
	return id
}

// unlinkedFor is how long the renderer's latest client build may go unlinked before
// readiness turns false: longer than a rebuild's files take to land (the manifest last).
const unlinkedFor = 30 * time.Second

// unlinked is the readiness error while the client build the renderer's latest answer
// named has been one the document cannot link for unlinkedFor: pages then mix a client
// build with another bundle's HTML, and this replica should take no traffic until its
// assets_dir has the build.
func (d *deps) unlinked() error {
	if d.build == nil {
		return nil
	}
	p := d.build.client.Load()
	if p == nil || d.shell.Links(*p) {
		return nil
	}
	if since, ok := d.unknownBuilds.Load(*p); ok && time.Since(since.(time.Time)) >= unlinkedFor {
		return fmt.Errorf("the renderer's bundle was built with client build %q, which assets_dir has not held for %s: its pages link build %q instead",
			*p, time.Since(since.(time.Time)).Round(time.Second), d.shell.BuildID())
	}
	return nil
}
