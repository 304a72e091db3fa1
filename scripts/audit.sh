#!/usr/bin/env bash
# The dependency audit: resolve the app's runtime dependencies as a fresh install would (nothing is installed),
# write the resolved versions to requirements.lock, then audit that lock with pip-audit where a vulnerability
# database (PyPI's JSON API or OSV) can be reached.
#
#   bash scripts/audit.sh            # resolve, write requirements.lock, audit
#   bash scripts/audit.sh --lock     # resolve and write the lock only
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
python -m pip install --dry-run --ignore-installed --quiet --report "$report" "torch==2.13.0" -e ".[app]"
python - "$report" <<'PY'
import json
import sys

resolved = json.load(open(sys.argv[1]))["install"]
pins = sorted(
    (item["metadata"]["name"].lower(), item["metadata"]["version"])
    for item in resolved
    if item["metadata"]["name"].lower() != "attention-explorer"
)
with open("requirements.lock", "w") as lock:
    lock.write("# The app's runtime dependencies as a fresh install resolves them: bash scripts/audit.sh --lock\n")
    lock.writelines(f"{name}=={version.split('+')[0]}\n" for name, version in pins)
print(f"requirements.lock: {len(pins)} packages")
PY
[ "${1:-}" = "--lock" ] && exit 0
if ! python -m pip_audit --version >/dev/null 2>&1; then
    echo "pip-audit is not installed: python -m pip install pip-audit" >&2
    exit 2
fi
python -m pip_audit --requirement requirements.lock --no-deps --disable-pip --progress-spinner off
