#!/usr/bin/env python3
"""A stand-in for NCCL's RAS client socket, written from NVIDIA/nccl's public source.

Wire protocol (src/ras/client_support.cc, rasClientEventLoop(); client side in src/ras/client.cc,
connectToNCCL(), setOutputFormat(), getNCCLStatus()): newline-terminated commands, matched
case-insensitively.
  CLIENT PROTOCOL <n>  -> "SERVER PROTOCOL 2"   (NCCL_RAS_CLIENT_PROTOCOL in ras_internal.h)
  TIMEOUT <secs>       -> "OK" or "ERROR: Invalid timeout value <v>"
  SET FORMAT text|json -> "OK" (2.28.7+; older servers fall to "ERROR: Unknown command ...")
  STATUS / VERBOSE STATUS -> the report, then the server closes the connection
                             (rasClientRunComms() sets RAS_CLIENT_FINISHED)
  anything else        -> "ERROR: Unknown command <cmd>"
Report layouts: text as rasClientRunInit()/rasClientRunComms() print it ("NCCL version ...",
"Communicators...", the group table, Errors/Warnings with "#<g>-<c> (<hash>) MISMATCH" and
"Rank R has launched up to operation N -- GPU G managed by process P on node H"); JSON as
rasDumpCommsToJSON() with jsonWriteHeader()/jsonWriteRankData()/jsonWriteMissingRank().

Job shape: --ranks ranks, 8 per node named node0, node1, ...; rank r has pid --pid-base + r and
GPU r % 8. AllReduce counts start at --base; --behind R keeps rank R one operation behind.
--mode stuck: every query returns the same counts; --mode moving: each query adds 7.
--missing R lists rank R as missing (unresponsive). --text-only answers SET FORMAT like NCCL
< 2.28.7. The bound port is written to --port-file (127.0.0.1, port 0 chosen by the kernel).
"""
import argparse
import json
import os
import socket
import threading

FUNCS = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]  # ncclFuncToString
COMM_HASH = 0x27A079B828FF1A75


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--behind", type=int, default=-1)
    p.add_argument("--missing", type=int, default=-1)
    p.add_argument("--base", type=int, default=10235)
    p.add_argument("--pid-base", type=int, default=4700)
    p.add_argument("--mode", choices=["stuck", "moving"], default="stuck")
    p.add_argument("--text-only", action="store_true")
    # A hostile or broken peer on the RAS port: --raw-handshake-hex answers CLIENT PROTOCOL with
    # these bytes (e.g. f50a: "\xf5\n"); --raw-status-file answers (VERBOSE) STATUS with a file.
    p.add_argument("--raw-handshake-hex", default="")
    p.add_argument("--raw-status-file", default="")
    return p.parse_args()


ARGS = parse_args()
QUERIES = [0]
LOCK = threading.Lock()


def rank_info(r):
    return {"rank": r, "host": "node%d" % (r // 8), "pid": ARGS.pid_base + r, "gpu": r % 8}


def counts_now():
    with LOCK:
        n = QUERIES[0]
        QUERIES[0] += 1
    base = ARGS.base + (7 * n if ARGS.mode == "moving" else 0)
    counts = {}
    for r in range(ARGS.ranks):
        if r == ARGS.missing:
            continue
        c = base - 1 if r == ARGS.behind else base
        counts[r] = {f: 0 for f in FUNCS}
        counts[r]["AllReduce"] = c
        counts[r]["Broadcast"] = 2
    return counts


def report_json(counts):
    ranks = []
    for r, cc in sorted(counts.items()):
        i = rank_info(r)
        ranks.append({"rank": r, "host": i["host"], "pid": i["pid"], "cuda_dev": i["gpu"],
                      "nvml_dev": i["gpu"],
                      "status": {"init_state": 0, "async_error": 0, "finalize_called": False,
                                 "destroy_flag": False, "abort_flag": False},
                      "collective_counts": cc})
    missing = []
    if ARGS.missing >= 0:
        i = rank_info(ARGS.missing)
        missing.append({"rank": i["rank"], "host": i["host"], "pid": i["pid"], "cuda_dev": i["gpu"],
                        "nvml_dev": i["gpu"],
                        "status": {"unresponsive": True, "considered_dead": False}})
    doc = {"nccl_version": "2.29.1", "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
           "timestamp": "2026-12-02 00:15:00", "communicators_count": 1,
           "communicators": [{"hash": "0x%x" % COMM_HASH, "secondary_hash": "0x1:0x2",
                              "size": ARGS.ranks, "ranks_count": len(ranks),
                              "missing_ranks_count": len(missing), "ranks": ranks,
                              "missing_ranks": missing}],
           "ras": {"collection_time_sec": 0.001, "timeouts_count": 0}}
    return json.dumps(doc, indent=2) + "\n"


def report_text(counts):
    nodes = (ARGS.ranks + 7) // 8
    out = ["NCCL version 2.26.2+cuda12.8 compiled with CUDA 12.8",
           "CUDA runtime version 12080, driver version 12080", "",
           "Job summary", "===========", "",
           "  Nodes  Processes         GPUs  Processes     GPUs",
           "(total)   per node  per process    (total)  (total)",
           "%7d  %9d  %11d  %9d  %7d" % (nodes, min(8, ARGS.ranks), 1, ARGS.ranks, ARGS.ranks), "",
           "Communicators... (0.00s)", "=============", "",
           "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors",
           "    #  in group  per comm  per node  per comm  in group"]
    values = sorted({cc["AllReduce"] for cc in counts.values()})
    mismatch = len(values) > 1
    incomplete = ARGS.missing >= 0
    err = "INCOMPLETE" if incomplete else ("MISMATCH" if mismatch else "OK")
    out.append("%5d  %8d  %8d  %8s  %8d  %8d  %8s  %6s" % (0, 1, nodes, str(min(8, ARGS.ranks)),
                                                        ARGS.ranks, ARGS.ranks, "RUNNING", err))
    out += ["", "Errors", "======", ""]
    if incomplete:
        i = rank_info(ARGS.missing)
        out += ["INCOMPLETE", "  Missing communicator data from 1 job process",
                "  Process %d on node %s managing GPU %d" % (i["pid"], i["host"], i["gpu"]), "",
                "#0-0 (%016x) INCOMPLETE" % COMM_HASH, "  Missing communicator data from 1 rank",
                "  Rank %d -- GPU %d managed by process %d on node %s" % (
                    i["rank"], i["gpu"], i["pid"], i["host"]), ""]
    out += ["Warnings", "========", ""]
    if mismatch:
        out += ["#0-0 (%016x) MISMATCH" % COMM_HASH,
                "  Communicator ranks have different AllReduce operation counts"]
        by_value = {}
        for r, cc in counts.items():
            by_value.setdefault(cc["AllReduce"], []).append(r)
        # Most frequent first (rasValCountsCompareRev); an outlier group lists its ranks.
        for v, rs in sorted(by_value.items(), key=lambda kv: -len(kv[1])):
            if len(rs) > 1:
                out.append("  %d ranks have launched up to operation %d" % (len(rs), v))
            # rasCountIsOutlier() for VERBOSE STATUS: a lone rank always, else fewer than half
            # of the communicator's ranks (missing ones included).
            if len(rs) == 1 or len(rs) * 2 < ARGS.ranks:
                for r in sorted(rs):
                    i = rank_info(r)
                    if len(rs) > 1:
                        out.append("  Rank %d -- GPU %d managed by process %d on node %s" % (
                            r, i["gpu"], i["pid"], i["host"]))
                    else:
                        out.append("  Rank %d has launched up to operation %d -- GPU %d managed "
                                   "by process %d on node %s" % (r, v, i["gpu"], i["pid"],
                                                                 i["host"]))
        out.append("")
    return "\n".join(out) + "\n"


def serve(conn):
    fmt = "text"
    buf = b""
    try:
        conn.settimeout(30)
        while True:
            data = conn.recv(4096)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                cmd = line.decode(errors="replace").rstrip("\r")
                low = cmd.lower()
                if low.startswith("client protocol ") and ARGS.raw_handshake_hex:
                    conn.sendall(bytes.fromhex(ARGS.raw_handshake_hex))
                elif low.startswith("client protocol "):
                    conn.sendall(b"SERVER PROTOCOL 2\n")
                elif low.startswith("timeout "):
                    v = cmd[len("timeout "):]
                    ok = v.isdigit()
                    conn.sendall(b"OK\n" if ok else
                                 ("ERROR: Invalid timeout value %s\n" % v).encode())
                elif low.startswith("set format ") and not ARGS.text_only:
                    f = low[len("set format "):]
                    if f in ("text", "json"):
                        fmt = f
                        conn.sendall(b"OK\n")
                    else:
                        conn.sendall(("ERROR: Invalid format %s\n" % f).encode())
                elif low in ("status", "verbose status") and ARGS.raw_status_file:
                    with open(ARGS.raw_status_file, "rb") as f:
                        conn.sendall(f.read())
                    return
                elif low in ("status", "verbose status"):
                    counts = counts_now()
                    body = report_json(counts) if fmt == "json" else report_text(counts)
                    conn.sendall(body.encode())
                    return
                else:
                    conn.sendall(("ERROR: Unknown command %s\n" % cmd).encode())
    except OSError:
        pass
    finally:
        conn.close()


def main():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(tmp, ARGS.port_file)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
