// Command ssr-types writes the TypeScript types of the pages' props, and their JSON Schema,
// from the Go types the pages are registered with: Page(name, ssr.PageOptions{Load:
// ssr.Typed(func(*http.Request) (P, ssr.Result, error) {...})}) gives page name the props
// type P. A value the loader defers as ssr.Defer(func(ctx) (T, error) {...}), in a
// map[string]ssr.Deferred literal with constant names inside that Typed call, gets the type
// T in the TypeScript (PageDeferred, and PageComponentProps, what the page's component
// receives); the JSON Schema is the props' only. An island declared with
// ssr.TypedIsland[P](server, name, options) gets P in IslandProps, and in the schema under
// "island:name". Pin it as a tool of the module that
// registers the pages and run it from a go:generate line there:
//
//	go get -tool github.com/sidecar-ssr/sidecar-ssr/edge/cmd/ssr-types
//	//go:generate go tool ssr-types -ts ../app/src/props.gen.d.ts -schema ../app/src/props.gen.schema.json
//
// Usage:
//
//	ssr-types -ts FILE [-schema FILE] [packages]
//
// The packages (default: the one in the working directory) are searched for
// registrations; the types they use may come from anywhere. docs/go.md, "Typed props",
// says how the app uses the two files.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sidecar-ssr/sidecar-ssr/edge/internal/propstypes"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ssr-types:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	flags := flag.NewFlagSet("ssr-types", flag.ContinueOnError)
	ts := flags.String("ts", "", "the TypeScript declarations to write (a .d.ts)")
	schema := flags.String("schema", "", "the JSON Schema to write, for the renderer's check in development (optional)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *ts == "" {
		return errors.New("-ts: which file to write?")
	}
	patterns := flags.Args()
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	pages, err := propstypes.Find(".", patterns...)
	if err != nil {
		return err
	}
	if len(pages) == 0 {
		return fmt.Errorf("%v registers no page with ssr.Typed and no island with ssr.TypedIsland", patterns)
	}
	contract, err := propstypes.Convert(pages)
	if err != nil {
		return err
	}
	if err := write(*ts, contract.TypeScript()); err != nil {
		return err
	}
	if *schema != "" {
		return write(*schema, contract.JSONSchema())
	}
	return nil
}

// write replaces path with b unless it holds b already: an unchanged file keeps its time,
// so nothing that depends on it (the app's build, make) runs again for nothing.
func write(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
