#!/usr/bin/env python3
"""User-space one-way delay for an emulated WAN node (netem is not available on these kernels).

Run inside a node's network namespace (scripts/wan/netns.sh's wan_delay does all of this):

    delay.py --device dly0 --delay-ms 40

It opens the TUN device DEVICE (creating it if needed), and every IP packet the kernel routes into
it comes back out of it DELAY ms later, unchanged. The node's policy routing sends what it
*originates* towards a delayed destination into the TUN device (`ip rule ... lookup` a table whose
route is `dev dly0`); a packet written back arrives on dly0, is forwarded by the node (rule `iif
dly0 lookup main`) to eth0 and its tbf shaping. So a destination's packets are delayed once, on the
way out, which is one-way latency; the reply is delayed by the other node's own delay.

Order is kept (a FIFO: every packet waits the same time). Ctrl-C / SIGTERM end it. Python moves
some tens of thousands of packets a second, so use it with links of a few hundred Mbit/s at most.
"""

import argparse
import collections
import fcntl
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
MAX_PACKET = 65536


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    os.set_blocking(fd, False)
    return fd


def run(fd, delay_seconds):
    queue = collections.deque()  # (due time, packet)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            os.write(fd, queue.popleft()[1])
        timeout_ms = max(0.0, (queue[0][0] - now) * 1000) if queue else 1000
        for _ in poller.poll(timeout_ms):
            arrived = time.monotonic()
            while True:
                try:
                    packet = os.read(fd, MAX_PACKET)
                except BlockingIOError:
                    break
                queue.append((arrived + delay_seconds, packet))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True, help="TUN device name, e.g. dly0")
    parser.add_argument("--delay-ms", type=float, required=True, help="one-way delay, ms")
    args = parser.parse_args()
    if not 0 <= args.delay_ms <= 10000:
        parser.error(f"--delay-ms: {args.delay_ms} is outside 0..10000")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        fd = open_tun(args.device)
    except OSError as error:
        sys.exit(f"delay.py: cannot open TUN device {args.device}: {error}")
    try:
        run(fd, args.delay_ms / 1000.0)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
