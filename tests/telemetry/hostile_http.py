#!/usr/bin/env python3
"""Hostile HTTP servers on 127.0.0.1 (port 0, written to --port-file), one behaviour per --mode,
for the HTTP clients' bounds (tests/telemetry/ingest/http_fetch_test.cc):
  trickle     the answer one byte per second (status line included)
  huge        Content-Length 1.5 GB of spaces, streamed
  chunked     an endless chunked body, 1 MB chunks
  gzip-bomb   Content-Encoding: gzip, --inflated-mb MB of zeros (a few hundred KB on the wire)
  prom        a strict Prometheus API: query_range answers HTTP 400 for a step Prometheus refuses
              ("0.500s"), else a matrix of two GPUs; the step seen goes to --log
  prom-error  every request answers HTTP 400 with an error text holding newlines and terminal
              escapes
"""
import argparse
import json
import os
import re
import socket
import threading
import time
import urllib.parse
import zlib

P = argparse.ArgumentParser()
P.add_argument("--port-file", required=True)
P.add_argument("--mode", required=True)
P.add_argument("--inflated-mb", type=int, default=1024)
P.add_argument("--log", default="")
ARGS = P.parse_args()

# Prometheus's step: a float number of seconds, or a duration of integers with units.
STEP_OK = re.compile(r"^([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?|([0-9]+(ms|s|m|h|d|w|y))+)$")


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\r\n", 1)[0].decode(errors="replace")


def send(conn, status, body, ctype="application/json"):
    head = ("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
            % (status, ctype, len(body))).encode()
    conn.sendall(head + body)


def matrix(start, end, step):
    result = []
    for gpu in range(2):
        values = []
        t = start
        while t <= end + 1e-9:
            values.append([round(t, 3), "%d" % (300 + gpu)])
            t += step
        for name, v in (("DCGM_FI_DEV_POWER_USAGE", None), ("DCGM_FI_DEV_GPU_UTIL", "97")):
            vals = values if v is None else [[x[0], v] for x in values]
            result.append({"metric": {"__name__": name, "gpu": str(gpu), "Hostname": "n0"},
                           "values": vals})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def serve(conn):
    try:
        line = read_request(conn)
        if line is None:
            return
        if ARGS.mode == "trickle":
            for b in b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000:
                conn.sendall(bytes([b]))
                time.sleep(1)
        elif ARGS.mode == "huge":
            n = 1500 * 1000 * 1000
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % n)
            block = b" " * (1 << 20)
            sent = 0
            while sent < n:
                conn.sendall(block[: min(len(block), n - sent)])
                sent += len(block)
        elif ARGS.mode == "chunked":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            block = b" " * (1 << 20)
            while True:
                conn.sendall(b"%x\r\n" % len(block) + block + b"\r\n")
        elif ARGS.mode == "gzip-bomb":
            z = zlib.compressobj(9, zlib.DEFLATED, 31)
            zeros = b"\0" * (1 << 20)
            body = b"".join(z.compress(zeros) for _ in range(ARGS.inflated_mb)) + z.flush()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body) +
                         body)
        elif ARGS.mode == "prom":
            target = line.split(" ")[1]
            url = urllib.parse.urlparse(target)
            q = dict(urllib.parse.parse_qsl(url.query))
            if ARGS.log:
                with open(ARGS.log, "a") as f:
                    f.write("%s step=%s\n" % (url.path, q.get("step", "")))
            if url.path.endswith("/query_range"):
                step = q.get("step", "")
                if not STEP_OK.match(step):
                    send(conn, 400, json.dumps(
                        {"status": "error", "errorType": "bad_data",
                         "error": "invalid parameter \"step\": cannot parse \"%s\" to a valid "
                                  "duration" % step}).encode())
                    return
                secs = float(step) if re.match(r"^[0-9.]+$", step) else None
                if secs is None:
                    secs = 0
                    for n, u in re.findall(r"([0-9]+)(ms|s|m|h)", step):
                        secs += int(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u]
                send(conn, 200, json.dumps(
                    matrix(float(q["start"]), float(q["end"]), secs)).encode())
            else:
                send(conn, 200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}')
        elif ARGS.mode == "prom-error":
            send(conn, 400, json.dumps(
                {"status": "error", "errorType": "bad_data",
                 "error": "line one\nline two \x1b[2J\x1b[31mRED\x1b]0;title\x07"}).encode())
    except OSError:
        pass
    finally:
        conn.close()


def main():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
