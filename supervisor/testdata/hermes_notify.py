"""A Hermes-shaped gateway for the supervisor's tests, standard library only.

It speaks sd_notify as Hermes' gateway/systemd_notify.py does (AF_UNIX
datagrams, "@name" for an abstract socket, non-blocking, READY=1 with a
STATUS= once running, WATCHDOG=1 every WATCHDOG_USEC/2, STOPPING=1 on the
way down) and writes gateway_state.json as Hermes does. The first argument
picks a behaviour:

  hermes    READY, then keep-alives until SIGTERM (then STOPPING=1, exit 0)
  hang      READY and three keep-alives, then stop pinging and block
  trigger   READY and two quick keep-alives, then WATCHDOG=trigger
  silent S  never speak the protocol; exit 3 after S seconds
  garbage   malformed and oversized datagrams, then as hermes
  interval  READY, then WATCHDOG_USEC=300000, then no more keep-alives
  extend-huge  as hermes, but on SIGTERM it says STOPPING=1 and then asks
            for EXTEND_TIMEOUT_USEC=2^64-1 and 285 years every 20 ms,
            never exiting
  extend-once  as hermes, but on SIGTERM one EXTEND_TIMEOUT_USEC=300000,
            then it blocks without asking again
"""
import json
import os
import signal
import socket
import sys
import time

MODE = sys.argv[1]
ADDR = os.environ.get("NOTIFY_SOCKET", "")
USEC = int(os.environ.get("WATCHDOG_USEC", "0") or "0")
HOME = os.environ["HERMES_HOME"]


def send(msg):
    # Hermes speaks only when given both: an older unit or a config at 0
    # leaves it silent.
    if not ADDR or USEC <= 0:
        return
    addr = "\0" + ADDR[1:] if ADDR.startswith("@") else ADDR
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.setblocking(False)
        s.connect(addr)
        s.send(msg)
    finally:
        s.close()


def write_state(state):
    path = os.path.join(HOME, "gateway_state.json")
    tmp = os.path.join(HOME, ".gateway_state_test.tmp")
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "kind": "hermes-gateway", "argv": sys.argv,
                   "start_time": None, "gateway_state": state}, f)
    os.replace(tmp, path)


def on_term(*_):
    send(b"STOPPING=1")
    if MODE == "extend-huge":
        while True:  # 2^64-1 µs, and 285 years, what the report sent
            send(b"EXTEND_TIMEOUT_USEC=18446744073709551615")
            send(b"EXTEND_TIMEOUT_USEC=9000000000000000")
            time.sleep(0.02)
    if MODE == "extend-once":
        send(b"EXTEND_TIMEOUT_USEC=300000")
        block()
    write_state("stopped")
    sys.exit(0)


def block():
    while True:
        time.sleep(3600)


def ping_forever(count=None, period=None):
    period = period or (USEC / 2e6 if USEC > 0 else 0.1)
    n = 0
    while count is None or n < count:
        time.sleep(period)
        send(b"WATCHDOG=1")
        n += 1


signal.signal(signal.SIGTERM, on_term)
if MODE == "silent":
    time.sleep(float(sys.argv[2]))
    sys.exit(3)
write_state("starting")
if MODE == "garbage":
    send(b"\xff\xfe\x00READY=1")
    send(b"STATUS=garbage\nNOT A FIELD")
    send(b"WATCHDOG_USEC=soon")
    try:
        send(b"STATUS=oversized\n" + b"x" * 70000)
    except OSError:
        pass  # macOS caps unix datagrams at 2 KiB: the kernel refused it for us
write_state("running")
send(b"READY=1\nSTATUS=" + (b"after garbage" if MODE == "garbage" else b"Hermes Gateway running"))
if MODE == "hang":
    ping_forever(3)
    block()
elif MODE == "trigger":
    ping_forever(2, period=0.05)
    send(b"WATCHDOG=trigger")
    block()
elif MODE == "interval":
    send(b"WATCHDOG_USEC=300000")
    block()
else:
    ping_forever()
