// Package clock is the time by which the edge's HTML cache judges freshness: an entry's
// age, its TTL, stale-while-revalidate and stale-if-error windows.
//
// In every build but one it is time.Now. The e2e tests build the edge binary with the tag
// testclock, in which the clock runs ahead of time.Now by an offset the tests move forward
// over the admin listener (POST /testclock/advance?by=90s), so they walk through those
// windows without sleeping through them. Deadlines, timers and the shared cache's TTLs (the
// store's own clock) keep real time in every build.
package clock
