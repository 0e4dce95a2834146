#!/usr/bin/env python3
"""Converts `gpuscope monitor --format jsonl` output into the fake NVML's fixture format.

`gpuscope monitor --record FILE` writes fixtures directly; this exists because the JSONL of a
run carries the same readings (full precision) and is sometimes all that came back from the
GPU machine. Units go back to NVML's (mW, mJ, KB/s, GPM MiB/s), as FixtureWriter does.

usage: jsonl_to_fixture.py IN.jsonl OUT.txt "comment"
"""
import json
import sys

MIB = 1024.0 * 1024.0


def fmt(v):
    return f"{v:.6g}"


def main():
    src, dst, comment = sys.argv[1:4]
    rows = [json.loads(l) for l in open(src) if l.strip()]
    devices = {}
    frames = []  # [(devices rows, process rows)]
    current_time = None
    for r in rows:
        if r["type"] == "device":
            if r.get("gpu_instance_id") is not None:
                continue
            devices.setdefault(r["device"], r)
            if r["time_ns"] != current_time:
                frames.append(([], []))
                current_time = r["time_ns"]
            frames[-1][0].append(r)
        elif r["type"] == "process" and frames:
            frames[-1][1].append(r)
    with open(dst, "w") as f:
        f.write("# gpuscope NVML fixture v1 (format: src/nvml/fake_nvml.cpp)\n")
        f.write(f"# {comment}\n")
        f.write("driver unknown\n")
        for i, d in sorted(devices.items()):
            gpm = 1 if d.get("sm_active_pct") is not None else 0
            f.write(f"device {i} uuid={d['uuid']} gpm={gpm} mig=0 name={d['name']}\n")
        for devs, procs in frames:
            f.write("frame\n")
            for s in devs:
                out = []
                def add(key, v, scale=1.0, integer=True):
                    if v is None:
                        return
                    out.append(f"{key}={round(v * scale)}" if integer else f"{key}={fmt(v * scale)}")
                add("gpu_util", s.get("gpu_util_pct"))
                add("mem_util", s.get("mem_util_pct"))
                add("mem_used", s.get("memory_used_bytes"))
                add("mem_total", s.get("memory_total_bytes"))
                add("power_mw", s.get("power_w"), 1000)
                add("energy_mj", s.get("energy_j"), 1000)
                add("sm_clock", s.get("sm_clock_mhz"))
                add("mem_clock", s.get("mem_clock_mhz"))
                add("temp", s.get("temperature_c"))
                add("throttle", s.get("throttle_reasons"))
                if s.get("sm_active_pct") is not None:
                    add("gpm20", s.get("pcie_tx_bytes_per_s"), 1 / MIB, False)
                    add("gpm21", s.get("pcie_rx_bytes_per_s"), 1 / MIB, False)
                else:
                    add("pcie_tx_kbs", s.get("pcie_tx_bytes_per_s"), 1 / 1024)
                    add("pcie_rx_kbs", s.get("pcie_rx_bytes_per_s"), 1 / 1024)
                for key, field, scale in [("gpm2", "sm_active_pct", 1), ("gpm3", "sm_occupancy_pct", 1),
                                          ("gpm5", "tensor_active_pct", 1), ("gpm7", "tensor_hmma_pct", 1),
                                          ("gpm9", "tensor_imma_pct", 1), ("gpm6", "tensor_dfma_pct", 1),
                                          ("gpm10", "dram_bw_pct", 1), ("gpm11", "fp64_pct", 1),
                                          ("gpm12", "fp32_pct", 1), ("gpm13", "fp16_pct", 1),
                                          ("gpm60", "nvlink_rx_bytes_per_s", 1 / MIB),
                                          ("gpm61", "nvlink_tx_bytes_per_s", 1 / MIB)]:
                    add(key, s.get(field), scale, False)
                f.write(f"s {s['device']} {' '.join(out)}\n")
            for p in procs:
                line = f"p {p['device']} pid={p['pid']}"
                if p.get("memory_used_bytes") is not None:
                    line += f" used={p['memory_used_bytes']}"
                if p.get("sm_util_pct") is not None:
                    line += f" sm={round(p['sm_util_pct'])}"
                if p.get("mem_util_pct") is not None:
                    line += f" mem={round(p['mem_util_pct'])}"
                f.write(line + "\n")


if __name__ == "__main__":
    main()
