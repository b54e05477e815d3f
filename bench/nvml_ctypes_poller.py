#!/usr/bin/env python3
"""Reference poller for bench/nvml.sh: reads the same NVML fields wattwatch reads, from the same
library, the way nvitop and gpustat do -- pynvml-style ctypes bindings, one Python call per NVML
entry point, each return code checked and turned into an exception, handles looked up by index
each query (gpustat) and field values requested one field per call (nvitop's
nvmlDeviceGetFieldValues helper), GPM through a sample pair per device.

Usage: nvml_ctypes_poller.py LIB GPUS SECONDS [INTERVAL_MS]
  INTERVAL_MS 0 (default): poll as fast as possible. Prints one JSON line:
  {"gpu_samples": N, "cpu_s": S, "cpu_us_per_gpu_sample": X, "wall_s": W}
"""
import ctypes as C
import json
import resource
import sys
import time


class NVMLError(Exception):
    def __init__(self, rc):
        super().__init__(rc)
        self.rc = rc


class Utilization(C.Structure):
    _fields_ = [("gpu", C.c_uint), ("memory", C.c_uint)]


class Memory(C.Structure):
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]


class Value(C.Union):
    _fields_ = [("dVal", C.c_double), ("siVal", C.c_int), ("uiVal", C.c_uint),
                ("ulVal", C.c_ulong), ("ullVal", C.c_ulonglong), ("sllVal", C.c_longlong),
                ("usVal", C.c_ushort)]


class FieldValue(C.Structure):
    _fields_ = [("fieldId", C.c_uint), ("scopeId", C.c_uint), ("timestamp", C.c_longlong),
                ("latencyUsec", C.c_longlong), ("valueType", C.c_int), ("nvmlReturn", C.c_int),
                ("value", Value)]


class MetricInfo(C.Structure):
    _fields_ = [("shortName", C.c_char_p), ("longName", C.c_char_p), ("unit", C.c_char_p)]


class GpmMetric(C.Structure):
    _fields_ = [("metricId", C.c_uint), ("nvmlReturn", C.c_int), ("value", C.c_double),
                ("metricInfo", MetricInfo)]


class GpmMetricsGet(C.Structure):
    _fields_ = [("version", C.c_uint), ("numMetrics", C.c_uint), ("sample1", C.c_void_p),
                ("sample2", C.c_void_p), ("metrics", GpmMetric * 98)]


class GpmSupport(C.Structure):
    _fields_ = [("version", C.c_uint), ("isSupportedDevice", C.c_uint)]


def main():
    lib_path, gpus, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    interval_s = float(sys.argv[4]) / 1000.0 if len(sys.argv) > 4 else 0.0
    lib = C.CDLL(lib_path)

    def fn(name):
        f = getattr(lib, name)
        f.restype = C.c_int
        return f

    def check(rc):
        if rc != 0:
            raise NVMLError(rc)

    check(fn("nvmlInit_v2")())
    get_handle = fn("nvmlDeviceGetHandleByIndex_v2")
    power = fn("nvmlDeviceGetPowerUsage")
    energy = fn("nvmlDeviceGetTotalEnergyConsumption")
    limit = fn("nvmlDeviceGetEnforcedPowerLimit")
    util = fn("nvmlDeviceGetUtilizationRates")
    clock = fn("nvmlDeviceGetClockInfo")
    reasons = fn("nvmlDeviceGetCurrentClocksEventReasons")
    temp = fn("nvmlDeviceGetTemperature")
    mem = fn("nvmlDeviceGetMemoryInfo")
    pstate = fn("nvmlDeviceGetPerformanceState")
    fields = fn("nvmlDeviceGetFieldValues")
    gpm_support = fn("nvmlGpmQueryDeviceSupport")
    gpm_alloc = fn("nvmlGpmSampleAlloc")
    gpm_get = fn("nvmlGpmSampleGet")
    gpm_metrics = fn("nvmlGpmMetricsGet")

    def handle(i):
        h = C.c_void_p()
        check(get_handle(C.c_uint(i), C.byref(h)))
        return h

    def field(h, fid, scope=0):
        v = FieldValue()
        v.fieldId = fid
        v.scopeId = scope
        check(fields(h, C.c_int(1), C.byref(v)))
        check(v.nvmlReturn)
        return v.value.ullVal if v.valueType == 3 else v.value.uiVal

    gpm_samples = []
    last_gpm = [0.0] * gpus
    for i in range(gpus):
        h = handle(i)
        s = GpmSupport(version=1)
        check(gpm_support(h, C.byref(s)))
        a, b = C.c_void_p(), C.c_void_p()
        check(gpm_alloc(C.byref(a)))
        check(gpm_alloc(C.byref(b)))
        gpm_samples.append([a, b, False])

    def read(i):
        h = handle(i)
        out = {}
        u = C.c_uint()
        ull = C.c_ulonglong()
        for name, f in (("power", power), ("limit", limit)):
            try:
                check(f(h, C.byref(u)))
                out[name] = u.value / 1000.0
            except NVMLError:
                out[name] = None
        try:
            check(energy(h, C.byref(ull)))
            out["energy"] = ull.value
        except NVMLError:
            out["energy"] = None
        ut = Utilization()
        check(util(h, C.byref(ut)))
        out["util"] = (ut.gpu, ut.memory)
        check(clock(h, C.c_int(1), C.byref(u)))
        out["sm"] = u.value
        check(clock(h, C.c_int(2), C.byref(u)))
        out["mem_clock"] = u.value
        check(reasons(h, C.byref(ull)))
        out["reasons"] = ull.value
        check(temp(h, C.c_int(0), C.byref(u)))
        out["temp"] = u.value
        m = Memory()
        check(mem(h, C.byref(m)))
        out["mem"] = (m.used / 1048576.0, m.total / 1048576.0)
        p = C.c_int()
        check(pstate(h, C.byref(p)))
        out["pstate"] = p.value
        out["instant"] = field(h, 186) / 1000.0
        out["pcie"] = (field(h, 197), field(h, 198))
        out["nvlink"] = (field(h, 138, 0xFFFFFFFF), field(h, 139, 0xFFFFFFFF))
        now = time.monotonic()
        a, b, have = gpm_samples[i]
        if not have or now - last_gpm[i] > 0.1:
            check(gpm_get(h, b))
            if have:
                g = GpmMetricsGet(version=1, numMetrics=4, sample1=a, sample2=b)
                for k, mid in enumerate((2, 3, 5, 10)):
                    g.metrics[k].metricId = mid
                check(gpm_metrics(C.byref(g)))
                out["gpm"] = [g.metrics[k].value / 100.0 for k in range(4)]
            gpm_samples[i] = [b, a, True]
            last_gpm[i] = now
        return out

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    n = 0
    next_t = t0
    while time.monotonic() - t0 < seconds:
        for i in range(gpus):
            read(i)
            n += 1
        if interval_s > 0:
            next_t += interval_s
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(json.dumps({"gpu_samples": n, "cpu_s": cpu, "wall_s": wall,
                      "cpu_us_per_gpu_sample": cpu * 1e6 / max(n, 1),
                      "peak_rss_kib": r1.ru_maxrss}))


if __name__ == "__main__":
    main()
