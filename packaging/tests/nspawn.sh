#!/usr/bin/env bash
# Runs things under the packaged units with systemd as PID 1, on a machine that has none (CI's
# container): boots this machine's own OS in systemd-nspawn, read-only with a tmpfs overlay, so
# nothing it does stays behind. Not part of CI (it boots a whole OS and needs root and the
# systemd-container package, installed when missing). By hand:
#
#   packaging/tests/nspawn.sh suites TEST_BINARY...
#       each libtest binary (e.g. target/debug/deps/sandbox_functional-*) as user zeroclaw with
#       CI=true, once in a plain service and once under zeroclaw.service's [Service] hardening;
#       prints every test whose outcome differs (with its first panic line), exits 1 if any.
#       The hardened copy differs from the unit in Type=oneshot, PrivateTmp=no and
#       ReadWritePaths=/var/tmp /tmp <repo>/target (the tests keep their files there).
#   packaging/tests/nspawn.sh daemon
#       zeroclaw.socket and zeroclaw.service as packaged, ExecStart=<repo>/target/release/zeroclaw:
#       nothing runs before the first connection, GET /health activates the daemon (Type=notify:
#       active means READY=1 arrived), STATUS= is set, the socket survives a restart and a stop;
#       then one session through zeroclaw-acp-bridge against a loopback model, whose shell
#       tool call tries to read /etc/shadow and write /etc (packaging/tests/session.py).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d /var/tmp/zc-nspawn.XXXXXX)
nspawn_pid=
init_pid=

in_ct() { nsenter -t "$init_pid" -a "$@"; }

cleanup() {
  if [ -n "$init_pid" ]; then in_ct systemctl poweroff >/dev/null 2>&1 || true; fi
  if [ -n "$nspawn_pid" ]; then
    for _ in $(seq 30); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 1; done
    kill "$nspawn_pid" 2>/dev/null || true
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  mountpoint -q "$scratch/root" && umount "$scratch/root"
  rm -rf "$scratch"
}
trap cleanup EXIT

boot() {
  command -v systemd-nspawn >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-container
  mkdir "$scratch/root"
  mount --bind / "$scratch/root"
  # nspawn's own seccomp filter does not know the Landlock calls; the sandbox needs them.
  systemd-nspawn -D "$scratch/root" --volatile=overlay --boot --machine "zc-$$" --register=no \
    --keep-unit --console=read-only --bind-ro="$repo" --bind="$repo/target" \
    --system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self' \
    >"$scratch/boot.log" 2>&1 &
  nspawn_pid=$!
  for _ in $(seq 120); do
    init_pid=$(pgrep -P "$nspawn_pid" | head -n 1 || true)
    if [ -n "$init_pid" ]; then
      state=$(in_ct systemctl is-system-running --wait 2>/dev/null || true)
      case $state in running | degraded) echo "container booted ($state)"; return ;; esac
    fi
    sleep 1
  done
  tail -n 30 "$scratch/boot.log" >&2
  echo "FAILED: the container did not boot" >&2
  exit 1
}

install_user() {
  in_ct systemd-sysusers "$repo/packaging/sysusers.d/zeroclaw.conf" >/dev/null
  in_ct systemd-tmpfiles --create "$repo/packaging/tmpfiles.d/zeroclaw.conf"
}

# A transient copy of zeroclaw.service's [Service] section (or none: plain) running CMD once.
write_probe() {
  local name=$1 mode=$2
  shift 2
  {
    printf '[Unit]\nDescription=probe %s\n[Service]\n' "$name"
    if [ "$mode" = hardened ]; then
      sed -n '/^\[Service\]/,/^\[/p' "$repo/packaging/systemd/zeroclaw.service" | grep -vE \
        '^(\[|Type=|NotifyAccess=|Sockets=|WatchdogSec=|ExecStart=|ExecReload=|Restart|PrivateTmp=|StateDirectory|WorkingDirectory=)'
      echo "PrivateTmp=no"
      echo "ReadWritePaths=-/var/tmp /tmp $repo/target"
    fi
    printf 'Type=oneshot\nUser=zeroclaw\nEnvironment=CI=true\nWorkingDirectory=%s\n' "$repo"
    printf 'StandardOutput=file:/root/%s.log\nStandardError=file:/root/%s.log\n' "$name" "$name"
    printf 'ExecStart=%s\n' "$*"
  } | in_ct tee "/run/systemd/system/$name.service" >/dev/null
}

# "name outcome" for every test of a libtest log.
outcomes() { in_ct sed -n 's/^test \(.*\) \.\.\. \(ok\|FAILED\|ignored\)$/\1 \2/p' "/root/$1.log" | sort; }

suites() {
  [ "$#" -gt 0 ] || { echo "usage: $0 suites TEST_BINARY..." >&2; exit 2; }
  local differ=0 bin name
  for bin in "$@"; do
    bin=$(realpath "$bin")
    name=$(basename "$bin" | sed 's/-[0-9a-f]*$//')
    for mode in plain hardened; do
      write_probe "$name-$mode" "$mode" "$bin" --test-threads=2
      in_ct systemctl daemon-reload
      in_ct systemctl start "$name-$mode.service" >/dev/null 2>&1 || true
      echo "$name $mode: $(in_ct grep -E '^test result' "/root/$name-$mode.log" || echo 'no result')"
    done
    while read -r test plain hardened; do
      [ "$plain" = "$hardened" ] && continue
      differ=1
      reason=$(in_ct grep -A1 -F "'$test' " "/root/$name-hardened.log" | sed -n 2p | cut -c1-160)
      echo "  DIFFERS $test: plain $plain, hardened $hardened: $reason"
    done < <(join <(outcomes "$name-plain") <(outcomes "$name-hardened"))
  done
  [ "$differ" = 0 ] && echo "no test's outcome differs under the unit"
  return "$differ"
}

health() {
  in_ct curl -sS --fail --max-time 30 --unix-socket /run/zeroclaw/acp.sock http://localhost/health
}

daemon() {
  local bin=$repo/target/release/zeroclaw unit
  [ -x "$bin" ] || { echo "build it first: cargo build --release" >&2; exit 2; }
  for unit in "$repo"/packaging/systemd/*; do
    sed "s|/usr/bin/zeroclaw|$bin|" "$unit" | in_ct tee "/etc/systemd/system/$(basename "$unit")" >/dev/null
  done
  in_ct systemctl daemon-reload
  in_ct systemctl start zeroclaw.socket
  in_ct test -S /run/zeroclaw/acp.sock
  ! in_ct systemctl is-active --quiet zeroclaw.service || { echo "FAILED: started before a connection"; exit 1; }
  echo "socket listening, service not started"
  if ! health; then
    in_ct journalctl -u zeroclaw.service --no-pager | tail -n 30
    echo "FAILED: GET /health over the activated socket" >&2
    exit 1
  fi
  echo
  in_ct systemctl is-active --quiet zeroclaw.service || { echo "FAILED: not active after /health"; exit 1; }
  echo "active (READY=1); STATUS: $(in_ct systemctl show -p StatusText --value zeroclaw.service)"
  in_ct systemctl restart zeroclaw.service
  in_ct test -S /run/zeroclaw/acp.sock && health >/dev/null && echo "socket kept across a restart"
  in_ct systemctl stop zeroclaw.service
  in_ct test -S /run/zeroclaw/acp.sock && health >/dev/null && echo "socket kept across a stop; reactivated"
  in_ct systemd-analyze security --threshold=30 zeroclaw.service | tail -n 1
  session
}

# A session through zeroclaw-acp-bridge, a loopback model and an escape attempt (session.py).
session() {
  local bridge=$repo/target/release/zeroclaw-acp-bridge
  [ -x "$bridge" ] || { echo "no $bridge: session not run"; return; }
  # A project in the packaged projects root (tmpfiles.d): no drop-in needed.
  in_ct install -d -o zeroclaw -g zeroclaw -m 2770 /var/lib/zeroclaw-projects/work
  in_ct tee /etc/zeroclaw/config.toml >/dev/null <<'EOF'
[providers.mock]
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"

[agents.default]
provider = "mock"
model = "scripted"
EOF
  in_ct systemctl restart zeroclaw.service
  in_ct python3 "$repo/packaging/tests/session.py" "$bridge" /run/zeroclaw/acp.sock /var/lib/zeroclaw-projects/work || {
    in_ct journalctl -u zeroclaw.service --no-pager | tail -n 30
    echo "FAILED: the session" >&2
    exit 1
  }
}

mode=${1:-}
shift || true
case $mode in
  suites) boot; install_user; suites "$@" ;;
  daemon) boot; install_user; daemon ;;
  *) echo "usage: $0 suites TEST_BINARY... | daemon" >&2; exit 2 ;;
esac
