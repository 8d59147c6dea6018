#!/usr/bin/env python3
"""cuBLAS baseline through torch (present on the GPU machine, not a
dependency of gemmd): median time of C = A @ B^T for the tn layout, timed
with CUDA events the way gemmd times its kernels (one event pair per
launch, after warm-up).  Prints one JSON object per line."""
import json
import sys

import torch


def bench(m, n, k, dtype, warmup=10, iters=50):
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype)
    for _ in range(warmup):
        a @ b.t()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b.t()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1000.0)
    times.sort()
    med = times[len(times) // 2]
    return {"m": m, "n": n, "k": k, "dtype": str(dtype).split(".")[-1],
            "median_us": med, "tflops": 2.0 * m * n * k / med / 1e6}


def main():
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[sys.argv[1]]
    for size in sys.argv[2:]:
        m, n, k = (int(x) for x in size.split("x"))
        print(json.dumps(bench(m, n, k, dt)), flush=True)


if __name__ == "__main__":
    main()
