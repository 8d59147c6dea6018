#!/usr/bin/env python3
"""cuBLAS baseline through torch (present on the GPU machine, not a
dependency of gemmd): median time of C = A @ B^T for the tn layout, timed
with CUDA events the way gemmd times its kernels (one event pair per
launch, after warm-up).  Prints one JSON object per line.

All launches and their events are queued before the one synchronize, so
the GPU never waits for Python: with a synchronize after each pair, the
time torch takes to dispatch the next matmul lands between its start
event and the kernel (about 20 us, 12 % of a 4096^3 GEMM on an H200).
The output is preallocated for the same reason."""
import argparse
import json
import os
import statistics
import sys

import torch


def bench(m, n, k, dtype, warmup=10, iters=50):
    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    for _ in range(warmup):
        torch.matmul(a, b.t(), out=c)
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True),
              torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for s, e in pairs:
        s.record()
        torch.matmul(a, b.t(), out=c)
        e.record()
    torch.cuda.synchronize()
    # The median as gemmd takes it: the mean of the middle two of an
    # even count (times[n // 2] alone is the upper one).
    med = statistics.median(s.elapsed_time(e) * 1000.0 for s, e in pairs)
    return {"m": m, "n": n, "k": k, "dtype": str(dtype).split(".")[-1],
            "median_us": med, "tflops": 2.0 * m * n * k / med / 1e6}


def kernel_names(m, n, k, dtype):
    """The CUDA kernels one a @ b.t() runs, by torch's profiler."""
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    torch.matmul(a, b.t(), out=c)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        torch.matmul(a, b.t(), out=c)
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA})


def main():
    """cublas.py [--warmup N] [--iters N] [--kernels] DTYPE SIZE...: a
    JSON line per size, its timing or (--kernels) the kernels it runs."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--kernels", action="store_true")
    p.add_argument("dtype", choices=("bf16", "fp16"))
    p.add_argument("sizes", nargs="+")
    args = p.parse_args()
    # GEMMD_TORCH_BLAS=cublaslt: torch's own cuBLASLt path instead of cuBLAS.
    lib = os.environ.get("GEMMD_TORCH_BLAS")
    if lib:
        torch.backends.cuda.preferred_blas_library(lib)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    for size in args.sizes:
        m, n, k = (int(x) for x in size.split("x"))
        if args.kernels:
            out = {"m": m, "n": n, "k": k,
                   "kernels": kernel_names(m, n, k, dt)}
        else:
            out = bench(m, n, k, dt, warmup=args.warmup, iters=args.iters)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
