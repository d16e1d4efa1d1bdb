// Named under edge/ although it lives in bench/: Go lets only the edge's own import paths
// import edge/internal/document, and this contender writes the edge's very document.
module github.com/sidecar-ssr/sidecar-ssr/edge/bench/v8go

go 1.26.0

require github.com/tommie/v8go v0.34.0

require (
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/tommie/v8go/deps/android_amd64 v0.0.0-20250515043113-5dcc98077472 // indirect
	github.com/tommie/v8go/deps/android_arm64 v0.0.0-20250515043113-5dcc98077472 // indirect
	github.com/tommie/v8go/deps/darwin_amd64 v0.0.0-20250515043113-5dcc98077472 // indirect
	github.com/tommie/v8go/deps/darwin_arm64 v0.0.0-20250515043113-5dcc98077472 // indirect
	github.com/tommie/v8go/deps/linux_amd64 v0.0.0-20250515043113-5dcc98077472 // indirect
	github.com/tommie/v8go/deps/linux_arm64 v0.0.0-20250515043113-5dcc98077472 // indirect
	golang.org/x/sys v0.49.0 // indirect
	modernc.org/libc v1.79.0 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
	modernc.org/sqlite v1.61.1 // indirect
)

require (
	github.com/sidecar-ssr/sidecar-ssr/edge v0.0.0
	github.com/sidecar-ssr/sidecar-ssr/shop v0.0.0
)

replace (
	github.com/sidecar-ssr/sidecar-ssr/edge => ../../edge
	github.com/sidecar-ssr/sidecar-ssr/shop => ../../shop
)
