#!/usr/bin/env bash
# A class past one server process: N copies of the app behind HAProxy, each visitor kept on one copy (a cookie), so
# that Streamlit's websocket, its media files and a training job's page all reach the copy that holds the session.
#
#   scripts/serve_class.sh --replicas 3                     # 3 copies on this machine, the class at http://HOST:8501
#   scripts/serve_class.sh --servers "10.0.0.5:8501 10.0.0.6:8501" --bind 0.0.0.0   # copies started on other machines
#
# Options: --replicas N (copies started here, default 2), --servers "HOST:PORT …" (copies already running elsewhere,
# started there with `streamlit run app.py --server.address 0.0.0.0 --server.port PORT`; none are started here
# then), --bind ADDRESS (default 127.0.0.1; 0.0.0.0 for a classroom network), --port PORT (default 8501),
# --first-port PORT (the local copies' ports, default 8601 upwards), --checkpoint DIR (the copies' default model).
# Needs Debian's haproxy (apt-get install haproxy). Ctrl-C stops the proxy and every copy started here. See
# docs/deploy.md for TLS in front, XSRF and limits.
set -euo pipefail
cd "$(dirname "$0")/.."

replicas=2
servers=""
bind=127.0.0.1
port=8501
first_port=8601
checkpoint=""
while [ $# -gt 0 ]; do
    case "$1" in
        --replicas) replicas="$2"; shift 2 ;;
        --servers) servers="$2"; shift 2 ;;
        --bind) bind="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --first-port) first_port="$2"; shift 2 ;;
        --checkpoint) checkpoint="$2"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
done
if ! command -v haproxy >/dev/null; then
    echo "needs HAProxy: apt-get install haproxy" >&2
    exit 1
fi

# A class's visitors choose among the listed models and open no folder of this machine, even when a tunnel or a
# proxy that adds no forwarding header makes them look local (docs/deploy.md); TRANSFORMER_OPEN_FOLDERS=1 overrides.
export TRANSFORMER_OPEN_FOLDERS="${TRANSFORMER_OPEN_FOLDERS:-0}"

state=$(mktemp -d "${TMPDIR:-/tmp}/serve-class.XXXXXX")
children=()
cleanup() {
    for pid in "${children[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

if [ -z "$servers" ]; then
    for ((i = 0; i < replicas; i++)); do
        replica_port=$((first_port + i))
        TRANSFORMER_CHECKPOINT="${checkpoint:-${TRANSFORMER_CHECKPOINT:-}}" \
            python -m streamlit run app.py --server.port "$replica_port" --server.address 127.0.0.1 \
            >"$state/app-$i.log" 2>&1 &
        children+=($!)
        servers="$servers 127.0.0.1:$replica_port"
    done
fi

# Until every copy answers its health check (a copy on this machine loads its model first), 3 minutes at most.
healthy() {
    python - "$@" <<'PYTHON'
import sys, time, urllib.request
deadline = time.monotonic() + 180
for server in sys.argv[1:]:
    while True:
        try:
            with urllib.request.urlopen(f"http://{server}/_stcore/health", timeout=5) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"{server} did not answer /_stcore/health within 3 minutes")
        time.sleep(0.5)
PYTHON
}

config="$state/haproxy.cfg"
{
    echo "global"
    echo "    maxconn 4096"
    echo "defaults"
    echo "    mode http"
    echo "    option forwardfor      # the app sees each student's address (X-Forwarded-For)"
    echo "    timeout connect 5s"
    echo "    timeout client 1h"
    echo "    timeout server 1h"
    echo "    timeout tunnel 1h      # a websocket stays open as long as the page"
    echo "frontend class"
    echo "    bind $bind:$port"
    echo "    default_backend copies"
    echo "backend copies"
    echo "    balance leastconn"
    echo "    cookie attention-explorer-copy insert indirect nocache httponly"
    echo "    option httpchk GET /_stcore/health"
    n=0
    for server in $servers; do
        echo "    server copy$n $server check inter 2s cookie copy$n"
        n=$((n + 1))
    done
} >"$config"
haproxy -c -q -f "$config"
# shellcheck disable=SC2086
healthy $servers || { echo "see the copies' logs in $state" >&2; exit 1; }
haproxy -db -f "$config" >"$state/haproxy.log" 2>&1 &
children+=($!)
healthy "$bind:$port"
echo "the class: http://$bind:$port ($n copies:$servers); logs in $state"
wait -n "${children[@]}"
echo "a copy or the proxy ended; see $state" >&2
exit 1
