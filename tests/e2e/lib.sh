# Shared by the e2e scripts: `source "$src/tests/e2e/lib.sh"`.

# N (default 1) distinct loopback ports the kernel reports free right now, one per line. Ports
# drawn at random collided with the ephemeral ports of the tests' own Kafka and PostgreSQL
# connections (32768-60999 on Linux): trigd then could not serve its metrics and the test failed
# for no fault of trigd's.
free_port() {
  python3 - "${1:-1}" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
}
