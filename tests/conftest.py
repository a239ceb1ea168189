"""Test-wide settings: tiny models run fastest on one thread and avoid oversubscribing shared cores."""

import torch

torch.set_num_threads(1)
