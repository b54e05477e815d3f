#!/usr/bin/env python3
"""Writes the same telemetry (G GPUs x N ticks at 100 ms) in every format wattwatch reads, for
bench/ingest_throughput.sh: nvidia-smi CSV (the reference reader), dcgmi dmon, dcgm-exporter
text, W&B JSON lines, nvidia-smi tables in a Slurm .out, a home-made CSV. Values vary per tick so
no reader sees a constant file. usage: make_format_logs.py OUT_DIR TARGET_MB"""
import os
import sys

out, target = sys.argv[1], int(float(sys.argv[2]) * 1e6)
os.makedirs(out, exist_ok=True)
G = 8
BASE = 1763465360


def ts(t):  # nvidia-smi timestamp for tick t (100 ms)
    s = BASE + t // 10
    import time
    return time.strftime('%Y/%m/%d %H:%M:%S', time.gmtime(s)) + '.%03d' % ((t % 10) * 100)


def write(name, header, tick, footer=''):
    path = os.path.join(out, name)
    if os.path.exists(path) and os.path.getsize(path) >= target:
        return
    with open(path, 'w') as f:
        f.write(header)
        t, size = 0, len(header)
        while size < target:
            chunk = ''.join(tick(t + k) for k in range(100))
            f.write(chunk)
            size += len(chunk)
            t += 100
        f.write(footer)


def p(t, g):
    return 150 + (t * 7 + g * 13) % 400 + ((t + g) % 100) / 100


write('nvsmi.csv',
      'timestamp, index, name, power.draw [W], power.limit [W], utilization.gpu [%], '
      'utilization.memory [%], memory.used [MiB]\n',
      lambda t: ''.join('%s, %d, NVIDIA H100 80GB HBM3, %.2f W, 700.00 W, %d %%, %d %%, %d MiB\n'
                        % (ts(t), g, p(t, g), 90 + t % 11, t % 50, 60000 + g) for g in range(G)))
hdr = '# Entity  POWER  GPUTL  MCUTL  FBUSD  SMACT  DRAMA  PCITX  PCIRX  TOTEC\n' \
      '      Id      W                                                    mJ\n'
write('dcgmi.dmon', hdr,
      lambda t: ''.join('     GPU %d  %.3f  %d  %d  %d  %.3f  %.3f  %d  %d  %d\n'
                        % (g, p(t, g), 90 + t % 11, t % 50, 60000 + g, 0.5 + (t % 40) / 100,
                           0.2, 1000000 + t, 2000000 + t, 307252100911 + t * 50) for g in range(G))
      + ('\n' + hdr if t % 15 == 14 else ''))
lab = ('gpu="{g}",UUID="GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469{g}",pci_bus_id="00000000:3{g}:00.0",'
       'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="node0",'
       'DCGM_FI_DRIVER_VERSION="590.48.01"')
write('dcgm.prom', '',
      lambda t: ''.join('%s{%s} %s\n' % (n, lab.format(g=g), v(t, g))
                        for n, v in [('DCGM_FI_DEV_POWER_USAGE', lambda t, g: '%.6f' % p(t, g)),
                                     ('DCGM_FI_DEV_GPU_UTIL', lambda t, g: '%d' % (90 + t % 11)),
                                     ('DCGM_FI_DEV_FB_USED', lambda t, g: '%d' % (60000 + g)),
                                     ('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
                                      lambda t, g: '%d' % (15152422938 + t * 50)),
                                     ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', lambda t, g: '0.156205')]
                        for g in range(G)))
write('wandb.jsonl', '',
      lambda t: '{' + ', '.join('"system.gpu.%d.gpu": %d, "system.gpu.%d.powerWatts": %.3f, '
                                '"system.gpu.%d.memoryAllocatedBytes": %d' %
                                (g, 90 + t % 11, g, p(t, g), g, 60000 * 1048576) for g in range(G))
      + ', "_runtime": %.1f, "_timestamp": %.1f}\n' % (t / 10, BASE + t / 10))
write('custom.csv', 'ts_ms,gpu_id,power_w,util_pct,mem_used_mib\n',
      lambda t: ''.join('%d,%d,%.2f,%d,%d\n' % (BASE * 1000 + t * 100, g, p(t, g), 90 + t % 11,
                                                60000 + g) for g in range(G)))


def write_prom_json(name):
    """/api/v1/query_range responses as `triage --prometheus` fetches them: one document per
    11,000 ticks (the server's points-per-series limit), 5 DCGM series per GPU."""
    path = os.path.join(out, name)
    if os.path.exists(path) and os.path.getsize(path) >= target:
        return
    labels = ('"gpu":"{g}","UUID":"GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469{g}",'
              '"pci_bus_id":"00000000:3{g}:00.0","modelName":"NVIDIA H100 80GB HBM3",'
              '"Hostname":"node0","instance":"node0:9400","job":"dcgm"')
    metrics = [('DCGM_FI_DEV_POWER_USAGE', lambda t, g: '%.3f' % p(t, g)),
               ('DCGM_FI_DEV_GPU_UTIL', lambda t, g: '%d' % (90 + t % 11)),
               ('DCGM_FI_DEV_FB_USED', lambda t, g: '%d' % (60000 + g)),
               ('DCGM_FI_DEV_POWER_MGMT_LIMIT', lambda t, g: '700'),
               ('DCGM_FI_PROF_SM_ACTIVE', lambda t, g: '%.3f' % (0.5 + (t % 40) / 100))]
    with open(path, 'w') as f:
        t, size, per_doc = 0, 0, 11000
        while size < target:
            result = []
            for n, v in metrics:
                for g in range(G):
                    pts = ','.join('[%s,"%s"]' % ('%.1f' % (BASE + (t + k) / 10), v(t + k, g))
                                   for k in range(per_doc))
                    result.append('{"metric":{"__name__":"%s",%s},"values":[%s]}'
                                  % (n, labels.format(g=g), pts))
            doc = ('{"status":"success","data":{"resultType":"matrix","result":[%s]}}\n'
                   % ','.join(result))
            f.write(doc)
            size += len(doc)
            t += per_doc


write_prom_json('prom.json')
