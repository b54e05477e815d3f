#!/usr/bin/env python3
"""A stand-in for one PyTorch rank's Flight Recorder, written from pytorch's public source.

FIFO: as ProcessGroupNCCL's DumpPipe (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp): the
file is `<TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe`, unlinked if present, created with
mkfifo(0666), opened O_RDONLY|O_NONBLOCK and polled (shouldDump(): read() > 0) from a loop.
Dump: as DebugInfoWriter (torch/csrc/distributed/c10d/FlightRecorder*.cpp): the pickle goes to
`<TORCH_NCCL_DEBUG_INFO_TEMP_FILE><rank>` and the rank keeps running. The pickled object uses the
documented keys (version, pg_config, pg_status, entries with record_id, pg_id, process_group,
collective_seq_id, p2p_seq_id, op_id, profiling_name, time_created_ns, input_sizes, output_sizes,
state, time_discovered_started_ns, time_discovered_completed_ns, retired, is_p2p, frames
[{name, filename, line}]), pickled by CPython's own pickle (protocol --protocol, default 4).

Rank shape: collectives 1..--last on process group 0 ("default_pg"): all completed except the
last, which is "started" (the hang). With --behind this rank never entered the last one: its
newest entry is #last-1, completed, called from a different line. Process group 1 ("tp") has
three completed collectives on every rank. Environment variables with the real names are read
when the flags are absent.
"""
import argparse
import os
import pickle
import signal
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--pipe-prefix", default=os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", ""))
    p.add_argument("--dump-prefix",
                   default=os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/nccl_trace_rank_"))
    p.add_argument("--last", type=int, default=10235)
    p.add_argument("--behind", action="store_true")
    p.add_argument("--ready-file", required=True)
    p.add_argument("--protocol", type=int, default=4)
    p.add_argument("--entries", type=int, default=20, help="ring buffer size kept")
    p.add_argument("--dump-bytes", default="",
                   help="a hostile rank: answer the poke with this file's bytes as the dump")
    return p.parse_args()


ARGS = parse_args()
TORCH_FRAME = {"name": "all_reduce",
               "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
               "line": 2501}
WRAP_FRAME = {"name": "wrapper",
              "filename": "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py",
              "line": 81}
STEP_FRAME = {"name": "train_step", "filename": "/job/train.py", "line": 42}
LOG_FRAME = {"name": "log_metrics", "filename": "/job/train.py", "line": 57}
MAIN_FRAME = {"name": "main", "filename": "/job/train.py", "line": 120}


def entry(record_id, pg, seq, state, frames, t0):
    started = t0 + seq * 1000 + 10 if state in ("started", "completed") else None
    done = t0 + seq * 1000 + 900 if state == "completed" else None
    return {"record_id": record_id, "pg_id": int(pg[0]), "process_group": pg,
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
            "profiling_name": "nccl:all_reduce", "time_created_ns": t0 + seq * 1000,
            "input_sizes": [[1024, 1024]], "input_dtypes": ["Float"],
            "output_sizes": [[1024, 1024]], "output_dtypes": ["Float"], "state": state,
            "time_discovered_started_ns": started, "time_discovered_completed_ns": done,
            "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
            "duration_ms": 0.9 if done else None, "thread_id": "140000", "thread_name": "main",
            "frames": frames}


def make_dump():
    t0 = 1764634500 * 10**9
    pg0, pg1 = ("0", "default_pg"), ("1", "tp")
    last = ARGS.last - 1 if ARGS.behind else ARGS.last
    # One list object shared by many entries: CPython's pickle writes it once and BINGETs it.
    step_frames = [TORCH_FRAME, WRAP_FRAME, STEP_FRAME, MAIN_FRAME]
    log_frames = [TORCH_FRAME, WRAP_FRAME, LOG_FRAME, MAIN_FRAME]
    entries = []
    rid = 0
    for seq in range(1, 4):
        entries.append(entry(rid, pg1, seq, "completed", step_frames, t0))
        rid += 1
    for seq in range(max(1, last - ARGS.entries + 1), last + 1):
        hung = seq == ARGS.last and not ARGS.behind
        frames = log_frames if (ARGS.behind and seq == last) else step_frames
        entries.append(entry(rid, pg0, seq, "started" if hung else "completed", frames, t0))
        rid += 1
    ranks = str(list(range(ARGS.world)))
    return {
        "version": "2.10", "nccl_version": "2.26.2", "comm_lib_version": "2.26.2",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ranks},
                      "1": {"name": "1", "desc": "tp", "ranks": ranks}},
        "pg_status": {"0": {"last_enqueued_collective": last, "last_started_collective": last,
                            "last_completed_collective": last if ARGS.behind else last - 1},
                      "1": {"last_enqueued_collective": 3, "last_started_collective": 3,
                            "last_completed_collective": 3}},
        "entries": entries,
    }


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    path = "%s%d.pipe" % (ARGS.pipe_prefix, ARGS.rank)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    os.mkfifo(path, 0o666)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(ARGS.ready_file + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(ARGS.ready_file + ".tmp", ARGS.ready_file)
    while True:
        try:
            data = os.read(fd, 128)
        except BlockingIOError:
            data = b""
        if data:
            if ARGS.dump_bytes:
                with open(ARGS.dump_bytes, "rb") as f:
                    blob = f.read()
            else:
                blob = pickle.dumps(make_dump(), protocol=ARGS.protocol)
            # DebugInfoWriter::write streams into the file in place (no rename): write it in two
            # parts so a reader can catch it half-written.
            with open("%s%d" % (ARGS.dump_prefix, ARGS.rank), "wb") as out:
                out.write(blob[: len(blob) // 2])
                out.flush()
                time.sleep(0.05)
                out.write(blob[len(blob) // 2:])
        time.sleep(0.05)


if __name__ == "__main__":
    main()
