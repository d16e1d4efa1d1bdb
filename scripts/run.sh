#!/usr/bin/env bash
# Starts the renderer, waits until every worker has loaded the bundle, then starts the demo
# shop (its catalog in bin/shop.db, created on first run). Arguments go to the shop
# (-listen, -admin-listen, -db...), SSR_RENDERER_* variables to the renderer, SSR_ADMIN_TOKEN
# (or one made for the run, in bin/admin-token) to the shop's admin listener.
#
# As in the pod, a renderer that exits is started again while the shop serves pages for the
# browser to render: after 1 s, doubling up to 8 s while it keeps exiting within 10 s of its
# start; the fifth such exit in a row stops everything (a bundle that cannot load).
# SIGHUP is passed on to the renderer: its workers move to the bundle file as it is now.
# Ctrl-C, or the shop exiting, stops everything.
#
# --dev (make dev): app/build.mjs --watch rebuilds the app on every change under app/src
# and sends this script SIGHUP after each build that changed the server bundle (the shop
# reads a new client manifest itself).
set -euo pipefail
cd "$(dirname "$0")/.."

# bash cannot trap a signal that was ignored when it started (nohup, a supervisor that
# ignores SIGHUP): this script starts again with SIGHUP's default disposition, so that a
# reload reaches the renderer. Once only: if it is still ignored, it says so.
hup_ignored() { (( 0x$(awk '/^SigIgn:/ {print $2}' "/proc/$$/status" 2>/dev/null || echo 0) & 1 )); }
if hup_ignored; then
  if [[ -z ${RUN_SH_HUP_RESET:-} ]]; then
    RUN_SH_HUP_RESET=1 exec env --default-signal=HUP "$0" "$@"
  fi
  echo "run.sh: SIGHUP is ignored in this process and cannot be reset here: reload the renderer with kill -HUP on its pid (its log's \"pid\")" >&2
fi

node=renderer/node_modules/.bin/node
read -ra node_flags <<< "$("$node" -p "require('./renderer/node-flags.json').join(' ')")"
dev=false
if [[ ${1:-} == --dev ]]; then
  dev=true
  shift
fi
http_listen=${SSR_RENDERER_HTTP_LISTEN:-:9101}
http_host=${http_listen%:*}
[[ -n $http_host && $http_host != 0.0.0.0 ]] || http_host=127.0.0.1
ready_url="http://$http_host:${http_listen##*:}/readyz"

renderer='' started=0 shop='' restart_timer='' watcher=''
stop() { kill $renderer $shop $restart_timer $watcher 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT
trap 'exit 130' INT TERM
trap '[[ -z $renderer ]] || kill -HUP "$renderer" 2>/dev/null || true' HUP

start_renderer() {
  "$node" "${node_flags[@]}" renderer/src/main.js & renderer=$!
  started=$SECONDS
}

start_renderer
until "$node" -e "fetch('$ready_url').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; do
  kill -0 "$renderer" 2>/dev/null || { echo "run.sh: the renderer exited during start-up" >&2; exit 1; }
  (( SECONDS - started < 60 )) || { echo "run.sh: the renderer was not ready within 60 s ($ready_url)" >&2; exit 1; }
  sleep 0.2
done

# Purges and profiles on the admin listener need a token, from loopback too (no address is
# trusted): SSR_ADMIN_TOKEN's, or one made for this run; in bin/admin-token for curl.
if [[ -z ${SSR_ADMIN_TOKEN:-} ]]; then
  SSR_ADMIN_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
fi
export SSR_ADMIN_TOKEN
(umask 077 && printf '%s\n' "$SSR_ADMIN_TOKEN" > bin/admin-token)

bin/shop -db bin/shop.db "$@" & shop=$!
echo
echo "sidecar-ssr is serving the demo shop on http://localhost:8080  (Ctrl-C stops)"
echo "purge: curl -X POST -H \"Authorization: Bearer \$(cat bin/admin-token)\" 'http://127.0.0.1:9100/cache/purge?path=/'"
if $dev; then
  "$node" app/build.mjs --watch --notify $$ & watcher=$!
  echo "and rebuilding the app on every change under app/src"
fi
echo

quick_exits=0
while :; do
  unset exited
  status=0
  wait -n -p exited $shop $renderer $restart_timer $watcher || status=$?
  case ${exited:-} in
    '') ;; # SIGHUP, passed on
    "$shop")
      echo "run.sh: the shop exited (status $status): stopping" >&2
      exit "$status"
      ;;
    "$watcher")
      echo "run.sh: the app watcher exited (status $status): stopping" >&2
      exit 1
      ;;
    "$renderer")
      renderer=''
      if (( SECONDS - started < 10 )); then quick_exits=$((quick_exits + 1)); else quick_exits=0; fi
      if (( quick_exits >= 5 )); then
        echo "run.sh: the renderer exited $quick_exits times in a row within 10 s of its start: giving up (its log is above)" >&2
        exit 1
      fi
      delay=$(( 1 << (quick_exits > 0 ? quick_exits - 1 : 0) ))
      echo "run.sh: the renderer exited (status $status): restarting it in $delay s; until then the browser renders the pages" >&2
      sleep "$delay" & restart_timer=$!
      ;;
    "$restart_timer")
      restart_timer=''
      start_renderer
      echo "run.sh: renderer restarted (pid $renderer)" >&2
      ;;
  esac
done
