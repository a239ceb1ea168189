"""Test-wide settings: tiny models run fastest on one thread and avoid oversubscribing shared cores."""

import torch

torch.set_num_threads(1)


def pytest_report_header(config):
    # which vectorised ATen kernels this run uses (tests/test_cpu_kernels.py checks it in its children)
    return f"torch CPU capability: {torch.backends.cpu.get_cpu_capability()}"
